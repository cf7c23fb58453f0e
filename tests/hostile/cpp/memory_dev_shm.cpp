// expect: memory_limit
// limits: memory=64MiB
#include <cstdio>
int main() {
    static char buf[1 << 20];
    FILE* f = fopen("/dev/shm/fill", "wb");
    if (!f) return 3;
    while (true) { if (fwrite(buf, 1, sizeof buf, f) != sizeof buf) return 4; fflush(f); }
}
