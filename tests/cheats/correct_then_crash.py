# task: count_up
# expect: RE
# The right answer followed by a non-zero exit: RE, never AC (rllm ignores the exit code).
import sys
n = int(input())
for i in range(1, n + 1):
    print(i)
sys.stdout.flush()
sys.exit(1)
