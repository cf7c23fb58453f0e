# expect: runtime_error
# stdout: visible: []
# /etc/shadow, the repository, $HOME and the judge's files (paths given on stdin) are not there.
import os, sys
paths = ["/etc/shadow", "/root", "/home", "/work/main"] + sys.stdin.read().split()
print("visible:", [p for p in paths if os.path.exists(p)])
open("/etc/shadow").read()
