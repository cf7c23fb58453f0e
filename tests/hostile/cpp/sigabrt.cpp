// expect: runtime_error
// signal: SIGABRT
#include <cstdlib>
int main() { abort(); }
