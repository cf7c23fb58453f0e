# expect: runtime_error
# stdout:
# The server (PID 1) is not dumpable: its memory and descriptors are closed to the program.
import os
for path in ("/proc/1/mem", "/proc/1/environ", "/proc/1/fd/0"):
    try:
        open(path, "rb").read(1)
        print("opened", path)
    except OSError:
        pass
print(os.listdir("/proc/1/fd"))
