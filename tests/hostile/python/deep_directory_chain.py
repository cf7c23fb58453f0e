# expect: ok
# stdout: built 20000
# A 20,000-deep chain of directories in /tmp (mkdirat/openat, each level opened from the last)
# once overflowed the server's recursive wipe: the server then sent two replies to one request
# and every later run in the sandbox was a sandbox error. The wipe is iterative and fd-based.
import os

fd = os.open("/tmp", os.O_RDONLY)
for depth in range(20000):
    os.mkdir("d", dir_fd=fd)
    if depth % 1000 == 0:
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    child = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = child
print("built", depth + 1)
