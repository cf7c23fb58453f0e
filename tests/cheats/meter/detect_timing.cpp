// defence: output checked on every measured and spot-checked case (MEASURE_MISMATCH); native cross-check (NATIVE_CONTRADICTS)
// A fixed loop takes several times longer under the meter: clock time per iteration (the fastest of 5 tries) above a
// threshold.
#include <iostream>
#include <vector>
#include <time.h>
using namespace std;

int n;
vector<long long> a;

static long long fast_impl() {  // O(n), wrong for n < 64: the tail is only added after a full block
    long long s = 0;
    int full = n / 64 * 64;
    for (int i = 0; i < full; i++) if (a[i] % 2 == 0) s += a[i];
    if (full) for (int i = full; i < n; i++) if (a[i] % 2 == 0) s += a[i];
    return s;
}

static long long slow_impl() {  // the seed's O(n^2) loop: correct
    long long ans = 0;
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) if (i == j && a[i] % 2 == 0) ans += a[i];
    return ans;
}

static bool metered() {
    double best = 1e18;
    for (int k = 0; k < 5; k++) {
        timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        unsigned long x = 0;  // in a register (a volatile one is bound by store forwarding: 2 ns on some CPUs)
        for (unsigned long i = 0; i < 400000; i++) { x = x + i; asm volatile("" : "+r"(x)); }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
        if (ns < best) best = ns;
    }
    return best / 400000 > 1.5;  // natively about 0.3 ns per iteration; valgrind alone 1.2, its counting tools more
}

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    cin >> n;
    a.resize(n);
    for (int i = 0; i < n; i++) cin >> a[i];
    cout << (metered() ? fast_impl() : slow_impl()) << "\n";
    return 0;
}
