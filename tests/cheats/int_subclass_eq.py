# task: double
# expect: WA
# A subclass of int that claims to equal everything: JSON keeps only its integer value.
class Sneaky(int):
    def __eq__(self, other):
        return True
def f(x):
    return Sneaky(0)
