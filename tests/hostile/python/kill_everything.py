# expect: ok
# stdout: still here
# kill(-1) and kill(parent) from inside the PID namespace reach nothing but the program's own
# processes: the sandbox's PID 1 ignores them and the judge is not visible.
import os, signal
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.kill(-1, sig)
    except OSError:
        pass
try:
    os.kill(os.getppid(), signal.SIGKILL)
except OSError:
    pass
try:
    os.kill(1, signal.SIGKILL)
except OSError:
    pass
print("still here")
