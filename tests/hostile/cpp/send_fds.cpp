// expect: ok
// stdout: blocked blocked
// Files sent over a Unix socket (SCM_RIGHTS) and left in flight are memory no process holds: the
// seccomp filter allows sendmsg only at or above the descriptor floor, which no case can reach (a
// native program inherits the server's hard RLIMIT_NOFILE, lowered to the floor before it is
// spawned). Here: a socket at the lowest free descriptor, then one as high as the limits allow.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *send_one(int sock, int fd) {
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    char byte = 'x';
    iovec io = {&byte, 1};
    msghdr msg = {};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    if (sendmsg(sock, &msg, 0) >= 0) return "sent";
    return errno == EPERM ? "blocked" : "failed";
}

int main() {
    int pair[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
    int memfd = memfd_create("parked", 0);
    rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max = 1 << 20;  // refused: only lowering needs no privilege
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    int high = fcntl(pair[0], F_DUPFD, (int)rl.rlim_cur - 1);
    printf("%s %s\n", send_one(pair[0], memfd), send_one(high, memfd));
    return 0;
}
