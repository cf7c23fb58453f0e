# expect: runtime_error
# Default recursion limit: RecursionError, an ordinary runtime error (never a crash of the judge).
def f(n):
    return f(n + 1) + 1
f(0)
