# expect: output_limit
# limits: output=1MiB
import sys
while True:
    sys.stderr.write("e" * 1000 + "\n")
