// defence: the meter refuses a writable open of /proc/self/mem (writes_meter; --smc-check=all would count the patch)
// The same patch with no mprotect at all: the 4 bytes are written through /proc/self/mem, which writes to
// read-only pages. The code stays file-backed, so valgrind's default check (all-non-file) would not see it; the
// call goes through a pointer, so the translation that starts at dispatch is made once and used again.
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <unistd.h>
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
asm(".text\n.p2align 4\n.globl dispatch\n.type dispatch,@function\ndispatch:\n"
    "  .byte 0xe9\n  .long fast_impl - . - 4\n  .size dispatch, . - dispatch\n");

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    cin >> n;
    a.resize(n);
    for (int i = 0; i < n; i++) cin >> a[i];
    long long ans = 0;
    int mem = open("/proc/self/mem", O_RDWR);
    long long (*volatile call)() = dispatch;
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            unsigned char* d = (unsigned char*)&dispatch;
            int32_t rel = (int32_t)((intptr_t)&slow_impl - (intptr_t)(d + 5));
            if (mem < 0 || pwrite(mem, &rel, 4, (off_t)(uintptr_t)(d + 1)) != 4) return 1;
        }
        ans = call();
    }
    cout << ans << "\n";
    return 0;
}
