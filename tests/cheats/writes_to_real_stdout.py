# task: double
# expect: WA
# A function-call solution printing the answer instead of returning it: print output is ignored.
import sys
def f(x):
    sys.__stdout__.write(str(x * 2) + "\n")
    print(x * 2)
    return None
