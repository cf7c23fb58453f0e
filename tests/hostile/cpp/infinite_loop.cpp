// expect: time_limit
// limits: cpu=1
int main() { volatile unsigned long x = 0; while (true) x++; }
