# task: count_up
# expect: OLE
import itertools
for i in itertools.count():
    print(i)
