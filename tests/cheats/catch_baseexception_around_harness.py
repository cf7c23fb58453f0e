# task: maybe_none
# expect: RE
# Swallow everything at exit and in the excepthook: the call still raised.
import sys, atexit
sys.excepthook = lambda *a: None
atexit.register(lambda: None)
def g(kind):
    try:
        raise KeyError(kind)
    finally:
        sys.stderr = None
