# expect: ok
# stdout: blocked blocked
# Files sent over a Unix socket (SCM_RIGHTS) and left in flight are memory no process holds: it
# stays charged to the sandbox after the case, and the next case's baseline would hide its own
# use. The seccomp filter allows sendmsg only on descriptors no case can have (at or above the
# descriptor floor, over every case's hard RLIMIT_NOFILE): here, a socket at the lowest free
# descriptor, then one as high as this process's limits let it go.
import os, resource, socket, fcntl
a, b = socket.socketpair()
memfd = os.memfd_create("parked")
out = []
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
high = socket.socket(fileno=fcntl.fcntl(a.fileno(), fcntl.F_DUPFD, hard - 1))
for sock in (a, high):
    try:
        socket.send_fds(sock, [b"x"], [memfd])
        out.append("sent")
    except PermissionError:
        out.append("blocked")
print(*out)
