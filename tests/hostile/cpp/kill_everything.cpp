// expect: ok
// stdout: still here
#include <csignal>
#include <cstdio>
#include <unistd.h>
int main() { kill(-1, SIGKILL); kill(getppid(), SIGKILL); kill(1, SIGKILL); puts("still here"); }
