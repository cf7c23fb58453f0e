# expect: memory_limit
# limits: memory=64MiB
# tmpfs pages are charged to the writer's memory cgroup: /dev/shm is memory.
chunk = b"x" * (1 << 20)
with open("/dev/shm/fill", "wb") as f:
    while True:
        f.write(chunk)
        f.flush()
