// expect: ok
// limits: cpu=4 wall=30
// stdout: flooded
// Fills /tmp with as many files and directories as 1.5 s of CPU makes (~300,000). Removing them
// takes the sandbox's server longer than that: once this wipe ran after the reply, into the
// next run's CPU measurement, and the next (trivial) run was a time limit. The wipe is done
// before this run's reply and the server's own CPU is never a program's.
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
int main() {
    char name[32];
    long n = 0;
    int dir = open("/tmp", O_RDONLY | O_DIRECTORY);
    while (clock() < 1.5 * CLOCKS_PER_SEC) {
        for (int k = 0; k < 1000; k++, n++) {
            snprintf(name, sizeof name, "f%ld", n);
            if (n % 3 == 0)
                mkdirat(dir, name, n % 2 ? 0 : 0700);
            else
                close(openat(dir, name, O_CREAT | O_WRONLY, 0600));
        }
    }
    printf("flooded\n");
}
