# expect: runtime_error
# limits: cpu=10 wall=20
# stderr-contains: RecursionError: maximum recursion depth exceeded
# Unbounded recursion under a recursion limit of 10**6 (as judge preludes set it). CPython stops
# it with a RecursionError a million frames deep; the traceback must be printed like CPython's
# (the last frames only), not formatted a million frames long into a time limit.
import sys, threading
sys.setrecursionlimit(10 ** 6)
threading.stack_size(1 << 27)
def f(n):
    return f(n + 1)
f(0)
