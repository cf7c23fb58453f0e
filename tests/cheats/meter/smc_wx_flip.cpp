// defence: the meter refuses new executable memory once the program has started (modifies_code)
// The same patch without ever holding writable and executable memory: dispatch() lives alone on its own page,
// which is made writable (not executable), patched, and made executable again (W^X), then called again.
#include <cstdint>
#include <cstring>
#include <iostream>
#include <vector>
#include <sys/mman.h>
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
asm(".section .text.dispatch,\"ax\",@progbits\n.p2align 12\n.globl dispatch\n.type dispatch,@function\ndispatch:\n"
    "  .byte 0xe9\n  .long fast_impl - . - 4\n  .size dispatch, . - dispatch\n.p2align 12\n.text\n");

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    cin >> n;
    a.resize(n);
    for (int i = 0; i < n; i++) cin >> a[i];
    long long ans = dispatch();
    void* page = (void*)((uintptr_t)&dispatch & ~(uintptr_t)4095);
    if (mprotect(page, 4096, PROT_READ | PROT_WRITE) == 0) {
        unsigned char* d = (unsigned char*)&dispatch;
        int32_t rel = (int32_t)((intptr_t)&slow_impl - (intptr_t)(d + 5));
        memcpy(d + 1, &rel, 4);
        mprotect(page, 4096, PROT_READ | PROT_EXEC);
        ans = dispatch();
    }
    cout << ans << "\n";
    return 0;
}
