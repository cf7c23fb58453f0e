# task: count_up
# expect: WA
# Hunt the filesystem for expected outputs: they never enter the sandbox.
import os
hits = []
for root in ("/", ):
    for dirpath, dirs, files in os.walk(root):
        if dirpath.startswith(("/proc", "/usr", "/sys")):
            dirs[:] = []
            continue
        for name in files:
            if "expected" in name or "answer" in name or name.startswith("output"):
                hits.append(os.path.join(dirpath, name))
for h in hits:
    try:
        print(open(h).read(), end="")
    except OSError:
        pass
