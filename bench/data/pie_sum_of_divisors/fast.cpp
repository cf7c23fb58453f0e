// Sum of k * d(k) for k = 1..N: each divisor d contributes d * (1 + 2 + ... + N/d), O(N).
#include <cstdio>

int main() {
    long long n;
    if (scanf("%lld", &n) != 1) return 1;
    long long s = 0;
    for (long long d = 1; d <= n; d++) {
        long long m = n / d;
        s += d * m * (m + 1) / 2;
    }
    printf("%lld\n", s);
}
