// expect: ok
// stdout: blocked
// Kernel AIO rings are freed after their process exits, so the next run's memory baseline held
// them and they left during it (a false AC by about 4 MiB): the seccomp filter refuses io_setup.
#include <cerrno>
#include <cstdio>
#include <sys/syscall.h>
#include <unistd.h>
int main() {
    unsigned long ctx = 0;
    long r = syscall(SYS_io_setup, 128, &ctx);
    std::puts(r == -1 && errno == EPERM ? "blocked" : "allowed");
}
