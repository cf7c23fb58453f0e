# expect: time_limit
# limits: cpu=1 wall=20
# detail: CPU time limit
# A fork bomb that swallows fork failures and keeps trying: only the time limit ends it.
# The run stops once the group's CPU passes the limit (cpuacct), long before the wall limit.
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
