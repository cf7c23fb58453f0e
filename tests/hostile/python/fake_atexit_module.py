# expect: runtime_error
# detail: exit code 3
# stdout: 42
# A fake atexit module whose _run_exitfuncs raises SystemExit(0) once hid sys.exit(3) (AC): the
# harness runs the real atexit module captured at start-up, and an exception at exit never
# changes the status (CPython's shutdown: python3 main.py exits 3).
import sys


class FakeAtexit:
    def _ncallbacks(self):
        return 1

    def _run_exitfuncs(self):
        raise SystemExit(0)

    def register(self, *args, **kwargs):
        pass


sys.modules["atexit"] = FakeAtexit()
print(42)
sys.exit(3)
