# expect: ok
# stdout: nothing found
# stdin: secret-paths
# A program that hunts for the judge's expected outputs: they are never inside the sandbox, so it
# can only guess. (The judge would score this WA; the sandbox itself sees a normal exit.)
import os, sys
found = []
for p in sys.stdin.read().split():
    try:
        found.append(open(p).read())
    except OSError:
        pass
for root in ("/prog", "/work", "/tmp", "/arbiter"):
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                text = open(path, errors="replace").read()
            except OSError:
                continue
            if "EXPECTED-ANSWER" in text:
                found.append(text)
print("\n".join(found) if found else "nothing found")
