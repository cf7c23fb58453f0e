// expect: time_limit
// limits: cpu=1
// stderr is drained and capped, never an output limit; an endless flood ends at the time limit.
#include <cstdio>
int main() { while (true) fputs("eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee\n", stderr); }
