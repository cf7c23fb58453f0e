# expect: output_limit
# limits: output=1MiB
import sys
sys.stdout.write("z" * (8 << 20))
