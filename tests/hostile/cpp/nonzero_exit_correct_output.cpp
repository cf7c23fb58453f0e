// expect: runtime_error
// The right answer followed by a non-zero exit is still a runtime error.
#include <cstdio>
int main() { puts("42"); return 1; }
