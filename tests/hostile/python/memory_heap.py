# expect: memory_limit
# limits: memory=64MiB
blocks = []
while True:
    blocks.append(bytearray(8 << 20))
