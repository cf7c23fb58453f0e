// expect: memory_limit
// limits: memory=64MiB
#include <cstdlib>
#include <cstring>
#include <vector>
int main() {
    std::vector<char*> v;
    while (true) { char* p = (char*)malloc(8 << 20); if (!p) return 3; memset(p, 1, 8 << 20); v.push_back(p); }
}
