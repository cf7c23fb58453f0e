# expect: time_limit
# limits: cpu=1
# A fork bomb that swallows fork failures and keeps trying: only the time limit ends it.
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
