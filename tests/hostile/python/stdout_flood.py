# expect: output_limit
# limits: output=1MiB
import sys
line = "y" * 1000 + "\n"
while True:
    sys.stdout.write(line)
