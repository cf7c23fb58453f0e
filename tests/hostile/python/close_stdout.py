# expect: runtime_error
import os
os.close(1)
print("lost")
