# task: count_up
# expect: WA
# open-r1's zip compare accepts a prefix of the expected lines.
n = int(input())
if n:
    print(1)
