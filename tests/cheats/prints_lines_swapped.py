# task: count_up
# expect: WA
# rllm's set-of-lines compare accepts any order.
n = int(input())
for i in range(n, 0, -1):
    print(i)
