# expect: ok
# stdout: kept
# Print, then close sys.stdout (its buffer is flushed by close): exit 0 with the output kept, as
# `python3 main.py` does (finalization skips closed streams instead of failing on them).
import sys
print("kept")
sys.stdout.close()
