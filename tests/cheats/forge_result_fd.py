# task: double
# expect: RE
# Write a forged "success" frame to the harness's result descriptor, then raise: the harness
# overwrites it with the exception.
import os
def f(x):
    for fd in range(3, 10):
        try:
            os.write(fd, b'{"ok": true, "value": 4}')
        except OSError:
            pass
    raise ValueError("forged")
