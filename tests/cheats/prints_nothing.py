# task: count_up
# expect: WA
# Correct only on the case whose expected output is empty.
pass
