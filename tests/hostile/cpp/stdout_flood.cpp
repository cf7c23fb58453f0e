// expect: output_limit
// limits: output=1MiB
#include <cstdio>
int main() { while (true) puts("yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"); }
