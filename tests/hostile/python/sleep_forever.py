# expect: time_limit
# limits: cpu=1 wall=2
import time
time.sleep(10 ** 6)
