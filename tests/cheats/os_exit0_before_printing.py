# task: count_up
# expect: WA
import os
os._exit(0)
