# task: double
# expect: WA
# Forge a frame with a guessed value (the one example a prompt shows), then exit before the harness
# writes: the forged value is all the program could have returned; it fails the other cases.
import os
def f(x):
    os.write(3, b'{"ok": true, "value": 2}')
    os._exit(0)
