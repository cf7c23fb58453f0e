# expect: runtime_error
# A fork bomb: every process forks forever. pids.max stops it; the first failed fork raises.
import os
while True:
    os.fork()
