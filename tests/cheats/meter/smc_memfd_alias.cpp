// defence: the meter refuses new executable memory once the program has started (modifies_code)
// Two views of one memfd: a writable one and an executable one, never both on one mapping. A stub
// "movabs rax, target; jmp rax" is written through the writable view and called through the executable one;
// valgrind treats the executable view as file-backed code (not checked by default), so a rewritten stub can run
// stale.
#include <cstdint>
#include <cstring>
#include <iostream>
#include <sys/mman.h>
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

static void write_stub(unsigned char* w, long long (*target)()) {
    uint64_t t = (uint64_t)(uintptr_t)target;
    w[0] = 0x48; w[1] = 0xb8; memcpy(w + 2, &t, 8);  // movabs rax, target
    w[10] = 0xff; w[11] = 0xe0;                         // jmp rax
}

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    cin >> n;
    a.resize(n);
    for (int i = 0; i < n; i++) cin >> a[i];
    int fd = memfd_create("code", 0);
    if (fd < 0 || ftruncate(fd, 4096) != 0) { cout << slow_impl() << "\n"; return 0; }
    unsigned char* w = (unsigned char*)mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    void* x = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
    if (w == MAP_FAILED || x == MAP_FAILED) { cout << slow_impl() << "\n"; return 0; }
    auto call = (long long (*)())x;
    long long ans = 0;
    for (int round = 0; round < 2; round++) {
        write_stub(w, round == 0 ? fast_impl : slow_impl);
        ans = call();
    }
    cout << ans << "\n";
    return 0;
}
