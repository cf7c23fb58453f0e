# expect: memory_limit
# limits: memory=64MiB
import mmap
m = mmap.mmap(-1, 1 << 30)
for i in range(0, 1 << 30, 4096):
    m[i] = 1
