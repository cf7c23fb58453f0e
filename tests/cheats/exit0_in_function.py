# task: double
# expect: RE
# sys.exit(0) inside the called function: the call never returned a value.
import sys
def f(x):
    sys.exit(0)
