# expect: ok
# stdout: bye
# A grandchild keeps stdout open and sleeps: the run must end when the program exits.
import os, sys, time
if os.fork() == 0:
    if os.fork() == 0:
        time.sleep(1000)
    os._exit(0)
print("bye")
