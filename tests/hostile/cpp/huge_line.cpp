// expect: output_limit
// limits: output=1MiB
#include <cstdio>
int main() { for (long i = 0; i < (8L << 20); i++) putchar('z'); }
