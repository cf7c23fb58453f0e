# task: maybe_none
# expect: RE
# verl PR 7853: a wrapper that exits 0 after catching the exception scores this 1.0.
def g(kind):
    raise RuntimeError("no idea")
