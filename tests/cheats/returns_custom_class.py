# task: double
# expect: WA
class Box:
    def __init__(self, v):
        self.v = v
    def __repr__(self):
        return repr(self.v)
def f(x):
    return Box(x * 2)
