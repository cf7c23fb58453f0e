# task: count_up
# expect: AC
n = int(input())
print("\n".join(str(i) for i in range(1, n + 1)))
