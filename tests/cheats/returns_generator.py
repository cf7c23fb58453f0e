# task: double
# expect: WA
def f(x):
    yield x * 2
