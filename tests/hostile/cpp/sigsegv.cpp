// expect: runtime_error
// signal: SIGSEGV
int main() { volatile int* p = nullptr; *p = 1; }
