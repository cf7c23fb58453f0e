// expect: ok
// stdout: bye
#include <cstdio>
#include <unistd.h>
int main() { if (fork() == 0) { if (fork() == 0) sleep(1000); _exit(0); } puts("bye"); }
