# expect: ok
# stdout: 200000
import sys
sys.setrecursionlimit(10 ** 7)
def depth(n):
    return 0 if n == 0 else depth(n - 1) + 1
print(depth(200000))
