# expect: runtime_error
# Every path outside /work, /tmp and /dev/shm is read-only or absent.
import os
failures = 0
for path in ("/usr/evil", "/prog/evil", "/etc/evil", "/evil", "/proc/evil"):
    try:
        with open(path, "w") as f:
            f.write("pwned")
    except OSError:
        failures += 1
assert failures == 5, failures
raise SystemExit("nothing outside the scratch directories is writable")
