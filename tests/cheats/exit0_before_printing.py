# task: count_up
# expect: WA
import sys
sys.exit(0)
