# expect: time_limit
# limits: cpu=1 wall=20
# detail: CPU time limit
# The program sleeps while children it never waits for spin: their CPU counts (cpuacct group),
# and the run is stopped once the group's CPU passes the limit, not at the wall limit.
import os, time
for _ in range(2):
    if os.fork() == 0:
        while True:
            pass
time.sleep(60)
