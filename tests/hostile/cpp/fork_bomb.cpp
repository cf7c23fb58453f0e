// expect: time_limit
// limits: cpu=1
#include <unistd.h>
int main() { while (true) fork(); }
