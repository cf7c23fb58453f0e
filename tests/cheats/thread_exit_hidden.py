# task: count_up
# expect: RE
# The right output, then a non-daemon thread that exits 3 once the main thread is done, hidden
# from the harness's thread check by clearing threading._active: CPython still joins the thread
# (its _shutdown_locks) and exits 3.
import os, sys, threading, time

n = int(input())
for i in range(1, n + 1):
    print(i)
sys.stdout.flush()
threading.Thread(target=lambda: (time.sleep(0.1), os._exit(3))).start()
threading._active.clear()
