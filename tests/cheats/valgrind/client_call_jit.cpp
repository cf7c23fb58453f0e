// expect: modifies_code
// The client request's bytes exist only at run time: they are stored XOR-ed in the binary (no preamble in any
// file), decoded into an anonymous executable mapping and called. Natively the stub returns its default and the
// program calls solve() itself. The meter refuses the writable and executable mapping before the request is made
// (code written at run time is refused whatever it does: tests/cheats/meter); a request in such code would be
// refused too.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sys/mman.h>
using namespace std;

// The test fills in the task: "// @globals" (file scope), "// @read" and "// @print" (in main, run normally) and
// "// @work" (the computation, in solve(): under valgrind it would run natively, where it must not touch libc).
// @globals

static unsigned long solve(unsigned long, unsigned long) {
    // @work
    return 0;
}

// mov %rdi,%rax; mov %rsi,%rdx; rolq $3/$13/$61/$51 %rdi; xchg %rbx,%rbx; mov %rdx,%rax; ret  (each byte ^ 0x5a)
static const unsigned char STUB[] = {
    0x48 ^ 0x5a, 0x89 ^ 0x5a, 0xf8 ^ 0x5a, 0x48 ^ 0x5a, 0x89 ^ 0x5a, 0xf2 ^ 0x5a,
    0x48 ^ 0x5a, 0xc1 ^ 0x5a, 0xc7 ^ 0x5a, 0x03 ^ 0x5a, 0x48 ^ 0x5a, 0xc1 ^ 0x5a, 0xc7 ^ 0x5a, 0x0d ^ 0x5a,
    0x48 ^ 0x5a, 0xc1 ^ 0x5a, 0xc7 ^ 0x5a, 0x3d ^ 0x5a, 0x48 ^ 0x5a, 0xc1 ^ 0x5a, 0xc7 ^ 0x5a, 0x33 ^ 0x5a,
    0x48 ^ 0x5a, 0x87 ^ 0x5a, 0xdb ^ 0x5a, 0x48 ^ 0x5a, 0x89 ^ 0x5a, 0xd0 ^ 0x5a, 0xc3 ^ 0x5a,
};

int main() {
    // @read
    unsigned char* code = (unsigned char*)mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        solve(0, 0);
    } else {
        for (size_t i = 0; i < sizeof STUB; i++) code[i] = STUB[i] ^ 0x5a;
        auto stub = (unsigned long (*)(volatile unsigned long*, unsigned long))code;
        volatile unsigned long args[6] = {0x1102, (unsigned long)&solve, 0, 0, 0, 0};
        if (stub(args, 12345UL) == 12345UL) solve(0, 0);  // not under valgrind
    }
    // @print
    return 0;
}
