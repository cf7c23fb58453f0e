# expect: ok
# stdout: parent done
# setsid + double fork: a daemon that tries to outlive the run and keeps writing.
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for i in range(600):
            try:
                with open("/tmp/daemon-alive", "a") as f:
                    f.write("%d\n" % i)
            except OSError:
                pass
            time.sleep(0.1)
        os._exit(0)
    os._exit(0)
print("parent done")
sys.stdout.flush()
