# task: count_up
# expect: RE
# The right output, then a non-zero exit hidden by a fake atexit module: still RE.
import sys


class FakeAtexit:
    def _ncallbacks(self):
        return 1

    def _run_exitfuncs(self):
        raise SystemExit(0)


n = int(input())
for i in range(1, n + 1):
    print(i)
sys.modules["atexit"] = FakeAtexit()
sys.exit(3)
