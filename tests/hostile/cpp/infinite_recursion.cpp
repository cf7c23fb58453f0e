// expect: memory_limit
// limits: memory=64MiB
// Unbounded recursion eats the stack, which is memory: the stack limit equals the memory limit.
#include <cstdio>
int f(int n) { volatile char pad[256]; pad[0] = n; return f(n + 1) + pad[0]; }
int main() { printf("%d\n", f(0)); }
