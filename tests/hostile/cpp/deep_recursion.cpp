// expect: ok
// stdout: 1000000
// A million-deep recursion needs a large stack; contest judges allow it (stack bound by memory).
#include <cstdio>
int depth(int n) { volatile char pad[64]; pad[0] = 0; return n == 0 ? pad[0] : depth(n - 1) + 1; }
int main() { printf("%d\n", depth(1000000)); }
