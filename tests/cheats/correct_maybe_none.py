# task: maybe_none
# expect: AC
def g(kind):
    return None if kind == 0 else ""
