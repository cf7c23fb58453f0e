# expect: ok
# stdout: done
# Reading stdin again after EOF must return at once, never block.
import sys
data = sys.stdin.read()
again = sys.stdin.read()
more = sys.stdin.buffer.read()
print("done" if not again and not more else "unexpected")
