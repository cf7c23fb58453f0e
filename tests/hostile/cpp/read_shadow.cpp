// expect: runtime_error
#include <cstdio>
int main() { FILE* f = fopen("/etc/shadow", "r"); if (!f) return 1; int c; while ((c = fgetc(f)) != EOF) putchar(c); }
