// expect: ok
// stdout: built 20000
// A 20,000-deep chain of directories in /tmp built with mkdirat/openat, the deepest ones made
// unreadable: the server's wipe after the run must remove it all (iteratively: no recursion to
// overflow) and answer the next run.
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
int main() {
    int fd = open("/tmp", O_RDONLY | O_DIRECTORY);
    int depth = 0;
    for (; depth < 20000; depth++) {
        if (mkdirat(fd, "d", 0700) != 0) return 1;
        int child = openat(fd, "d", O_RDONLY | O_DIRECTORY);
        if (child < 0) return 2;
        if (depth > 19990) fchmod(fd, 0);
        close(fd);
        fd = child;
    }
    printf("built %d\n", depth);
}
