# expect: ok
# stdout: ok
# The competitive-programming idiom: lift the stack limit, then recurse deep in a big-stack thread.
# The hard RLIMIT_STACK is unlimited (the soft one is the configured stack; memory is capped by
# the cgroup), so this must not raise "ValueError: not allowed to raise maximum limit".
import resource, sys, threading
resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
sys.setrecursionlimit(10 ** 6)
threading.stack_size(1 << 27)
def depth(n):
    return 0 if n == 0 else depth(n - 1) + 1
def main():
    assert depth(100000) == 100000
    print("ok")
t = threading.Thread(target=main)
t.start()
t.join()
