# expect: runtime_error
# signal: SIGABRT
import os
os.abort()
