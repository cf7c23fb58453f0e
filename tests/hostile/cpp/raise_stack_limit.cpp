// expect: ok
// stdout: ok
// The competitive-programming idiom: lift the soft stack limit to the hard one (unlimited), then
// recurse deep. Must succeed: only the soft RLIMIT_STACK is the configured stack.
#include <cstdio>
#include <sys/resource.h>
int depth(int n) { volatile char pad[64]; pad[0] = 0; return n == 0 ? pad[0] : depth(n - 1) + 1; }
int main() {
    rlimit rl{RLIM_INFINITY, RLIM_INFINITY};
    if (setrlimit(RLIMIT_STACK, &rl) != 0) { perror("setrlimit"); return 1; }
    printf("%s\n", depth(1000000) == 1000000 ? "ok" : "wrong");
}
