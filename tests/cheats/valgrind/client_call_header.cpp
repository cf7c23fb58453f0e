// expect: client_request
// The work runs through VALGRIND_NON_SIMD_CALL1 from <valgrind/valgrind.h>: valgrind would call solve() natively,
// so none of its instructions would be counted. Natively (no valgrind) it calls solve() itself and is correct.
#include <cstdio>
#include <iostream>
#include <valgrind/valgrind.h>
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
    if (RUNNING_ON_VALGRIND) VALGRIND_NON_SIMD_CALL1(solve, 0);
    else solve(0, 0);
    // @print
    return 0;
}
