# task: double
# expect: AC
def f(x):
    return x * 2
