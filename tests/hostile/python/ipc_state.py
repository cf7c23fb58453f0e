# expect: ok
# stdout: blocked blocked blocked
# System V IPC, POSIX message queues and keyrings outlive a process: a program could leave its
# answers for its next run (or the next case). The sandbox's seccomp filter refuses them.
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
out = []
for nr, args in ((29, (0, 4096, 0o1000 | 0o600)),   # shmget(IPC_PRIVATE, ...)
                 (240, (b"/q", 0o100 | 2, 0o600, None)),  # mq_open("/q", O_CREAT|O_RDWR, ...)
                 (250, (0, -4, 0))):                  # keyctl(KEYCTL_GET_KEYRING_ID, @u)
    r = libc.syscall(nr, *args)
    out.append("blocked" if r == -1 and ctypes.get_errno() == 1 else "allowed")
print(*out)
