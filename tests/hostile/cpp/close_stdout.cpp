// expect: ok
// stdout:
#include <cstdio>
#include <unistd.h>
int main() { close(1); printf("lost\n"); }
