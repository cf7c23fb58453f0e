// Sum of k * d(k) for k = 1..N, d = number of divisors (the task of AtCoder ABC172 D / PIE p02624).
// Slow version: trial division up to sqrt(k) for every k, O(N sqrt N).
#include <bits/stdc++.h>
using namespace std;

int main() {
    long long n;
    cin >> n;
    long long s = 0;
    for (long long k = 1; k <= n; k++) {
        long long d = 0;
        for (long long i = 1; i * i <= k; i++)
            if (k % i == 0) d += (i * i == k) ? 1 : 2;
        s += k * d;
    }
    cout << s << endl;
}
