// expect: ok
// stdout: parent done
#include <cstdio>
#include <unistd.h>
int main() {
    if (fork() == 0) { setsid(); if (fork() == 0) { for (int i = 0; i < 600; i++) { FILE* f = fopen("/tmp/daemon-alive", "a"); if (f) { fprintf(f, "%d\n", i); fclose(f); } usleep(100000); } _exit(0); } _exit(0); }
    puts("parent done");
}
