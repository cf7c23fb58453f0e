// expect: memory_limit
// limits: memory=64MiB
#include <sys/mman.h>
#include <cstring>
int main() {
    size_t n = size_t(1) << 30;
    char* p = (char*)mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 3;
    memset(p, 1, n);
}
