// expect: ok
// limits: cpu=4 wall=30
// stdout: flooded
// Leaves 60,000 files and directories in /tmp (about 0.1-0.3 s of CPU, 55 MiB of kernel memory
// charged to the sandbox). Removing them costs the sandbox's server about as much again: once
// this wipe ran after the reply, into the next run's CPU measurement, and the next (trivial) run
// was a time limit. The wipe is done before this run's reply and the server's own CPU is never a
// program's. The count is fixed, not "as many as 1.5 s of CPU makes": on a fast kernel that was
// 650,000 entries, over 512 MiB, and the run was (rightly) a memory limit.
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
int main() {
    char name[32];
    long n = 0;
    int dir = open("/tmp", O_RDONLY | O_DIRECTORY);
    while (n < 60000) {
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
