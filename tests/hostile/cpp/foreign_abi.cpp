// expect: runtime_error
// signal: SIGSYS
// A 32-bit system call (int 0x80) from a 64-bit program would bypass a filter written for x86-64
// numbers: the seccomp filter kills the process.
int main() {
    long ret;
    asm volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");  // i386 getpid
    return 0;
}
