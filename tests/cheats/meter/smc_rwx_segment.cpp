// defence: the meter refuses code in writable memory (modifies_code)
// No system call at all: dispatch() is placed in a section the linker makes writable and executable, and main
// rewrites its jump with plain stores right before calling it, so the store and the call can share one
// translation (valgrind checks code at the start of a translation, never inside it).
#include <cstdint>
#include <cstring>
#include <iostream>
#include <vector>
using namespace std;

int n;
vector<long long> a;

extern "C" __attribute__((noinline, used)) long long fast_impl() {
    long long s = 0;
    int full = n / 64 * 64;
    for (int i = 0; i < full; i++) if (a[i] % 2 == 0) s += a[i];
    if (full) for (int i = full; i < n; i++) if (a[i] % 2 == 0) s += a[i];
    return s;
}

extern "C" __attribute__((noinline, used)) long long slow_impl() {
    long long ans = 0;
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) if (i == j && a[i] % 2 == 0) ans += a[i];
    return ans;
}

extern "C" long long dispatch();
asm(".section .wtext,\"awx\",@progbits\n.p2align 4\n.globl dispatch\n.type dispatch,@function\ndispatch:\n"
    "  .byte 0xe9\n  .long fast_impl - . - 4\n  .size dispatch, . - dispatch\n.text\n");

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    cin >> n;
    a.resize(n);
    for (int i = 0; i < n; i++) cin >> a[i];
    long long ans = 0;
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            unsigned char* d = (unsigned char*)&dispatch;
            int32_t rel = (int32_t)((intptr_t)&slow_impl - (intptr_t)(d + 5));
            memcpy(d + 1, &rel, 4);
        }
        ans = dispatch();
    }
    cout << ans << "\n";
    return 0;
}
