# expect: ok
# stdout:
import os
os._exit(0)
print("never")
