# expect: time_limit
# limits: cpu=1
while True:
    pass
