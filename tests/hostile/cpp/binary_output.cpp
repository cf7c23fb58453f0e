// expect: ok
// stdout-hex: 000102fffe80c3
#include <cstdio>
int main() { unsigned char b[] = {0, 1, 2, 255, 254, 128, 195}; fwrite(b, 1, sizeof b, stdout); }
