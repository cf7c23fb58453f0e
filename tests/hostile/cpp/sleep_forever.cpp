// expect: time_limit
// limits: cpu=1 wall=2
#include <unistd.h>
int main() { while (true) pause(); }
