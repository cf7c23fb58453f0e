# expect: time_limit
# limits: cpu=1
# stderr is drained and capped (first and last halves kept), never an output limit: contest judges
# ignore stderr, and heavy debug output must not fail a correct program. An endless flood is TLE.
import sys
while True:
    sys.stderr.write("e" * 1000 + "\n")
