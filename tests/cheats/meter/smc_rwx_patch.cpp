// defence: the meter refuses writable and executable memory (modifies_code)
// The cheat. dispatch() starts as "jmp fast_impl" (O(n), wrong for n < 64); main calls it once, makes its
// own .text writable and executable, patches the 5-byte jump to slow_impl (the seed's O(n^2) loop) and calls it
// again from the same call site. Natively the second call runs slow_impl: correct and as slow as the seed. Under
// valgrind's default --smc-check=all-non-file (no check of file-backed code) or a translation that covers the
// patch and the call, the stale translation keeps running fast_impl.
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
    int full = n / 64 * 64;  // blocks of 64; the tail is only added after a full block
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
asm(".text\n.p2align 4\n.globl dispatch\n.type dispatch,@function\ndispatch:\n"
    "  .byte 0xe9\n  .long fast_impl - . - 4\n  .size dispatch, . - dispatch\n");

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    cin >> n;
    a.resize(n);
    for (int i = 0; i < n; i++) cin >> a[i];
    long long ans = 0;
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            uintptr_t page = (uintptr_t)&dispatch & ~(uintptr_t)4095;
            mprotect((void*)page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC);
            unsigned char* d = (unsigned char*)&dispatch;
            int32_t rel = (int32_t)((intptr_t)&slow_impl - (intptr_t)(d + 5));
            memcpy(d + 1, &rel, 4);
        }
        ans = dispatch();  // same call site both times
    }
    cout << ans << "\n";
    return 0;
}
