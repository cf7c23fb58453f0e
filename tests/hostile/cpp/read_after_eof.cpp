// expect: ok
// stdout: done
#include <cstdio>
int main() {
    int c, n = 0;
    while ((c = getchar()) != EOF) n++;
    for (int i = 0; i < 1000; i++) if (getchar() != EOF) return 1;
    puts("done");
}
