// expect: runtime_error
#include <cstdio>
int main() {
    const char* paths[] = {"/usr/evil", "/prog/evil", "/etc/evil", "/evil"};
    for (auto p : paths) if (FILE* f = fopen(p, "w")) { fputs("pwned", f); fclose(f); return 0; }
    return 1;
}
