// expect: client_request
// The same client request (VG_USERREQ__CLIENT_CALL1 = 0x1102) written by hand in inline asm, no valgrind header:
// the special preamble (rolq $3, $13, $61, $51 %rdi) then xchgq %rbx,%rbx, with %rax pointing at the request
// block. Natively the sequence changes nothing (%rdx keeps its default), so the program calls solve() itself.
#include <cstdio>
#include <iostream>
using namespace std;

// The test fills in the task: "// @globals" (file scope), "// @read" and "// @print" (in main, run normally) and
// "// @work" (the computation, in solve(): under valgrind it would run natively, where it must not touch libc).
// @globals

static unsigned long solve(unsigned long, unsigned long) {
    // @work
    return 0;
}

int main() {
    // @read
    volatile unsigned long args[6] = {0x1102, (unsigned long)&solve, 0, 0, 0, 0};
    unsigned long result;
    __asm__ volatile("rolq $3, %%rdi\n\trolq $13, %%rdi\n\trolq $61, %%rdi\n\trolq $51, %%rdi\n\t"
                     "xchgq %%rbx, %%rbx"
                     : "=d"(result) : "a"(&args[0]), "0"(12345UL) : "cc", "memory");
    if (result == 12345UL) solve(0, 0);  // not under valgrind: nobody answered the request
    // @print
    return 0;
}
