// expect: output_limit
// limits: output=1MiB
// SIGXFSZ: the file size limit kills the program; reported as output limit exceeded.
#include <cstdio>
int main() {
    static char buf[1 << 20];
    FILE* f = fopen("/work/big", "wb");
    for (int i = 0; i < 8; i++) { fwrite(buf, 1, sizeof buf, f); fflush(f); }
}
