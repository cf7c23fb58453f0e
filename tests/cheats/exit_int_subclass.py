# task: count_up
# expect: RE
# The right output, then sys.exit with an int subclass whose & gives 0: CPython exits 3 (RE).
import sys


class Code(int):
    def __and__(self, other):
        return 0


n = int(input())
for i in range(1, n + 1):
    print(i)
sys.exit(Code(3))
