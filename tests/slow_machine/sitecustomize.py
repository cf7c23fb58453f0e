"""Test-only knobs that find speed-dependent tests (docs/CONTRIBUTING.md); the product never reads them.

- ``ARBITER_TEST_LIMIT_SCALE`` (e.g. ``0.5``): every run in a sandbox (programs, compiles, checkers,
  valgrind measurements) gets its CPU and wall limits multiplied by it, as on a machine ``1/scale``
  times slower; a test that then fails depends on the machine's speed.
- ``ARBITER_TEST_LIMIT_LOG`` (a file path): every run that used more than :data:`RECORD_ABOVE` of its
  CPU or wall limit is appended to that file as one JSON line naming the test; ``tests/conftest.py``
  prints the closest calls at the end of the session.

``tests/conftest.py`` installs this in the pytest process and puts this folder on ``PYTHONPATH``, so
the ``arbiter`` commands the tests start load it too (as ``sitecustomize``).
"""

from __future__ import annotations

import json
import os

SCALE_ENV = "ARBITER_TEST_LIMIT_SCALE"
LOG_ENV = "ARBITER_TEST_LIMIT_LOG"
#: Runs that used more than this fraction of a limit are logged.
RECORD_ABOVE = 0.2


def install() -> bool:
    """Wrap ``Sandbox._run`` (once); returns whether a knob is set."""
    raw, log = os.environ.get(SCALE_ENV), os.environ.get(LOG_ENV)
    if not raw and not log:
        return False
    scale = float(raw) if raw else 1.0
    if not 0 < scale <= 1:
        raise ValueError(f"{SCALE_ENV} must be in (0, 1], got {raw!r}")
    from arbiter.sandbox.sandbox import Sandbox

    run = Sandbox._run
    if getattr(run, "slow_machine", False):
        return True

    def knob_run(self, req, stdin, limits, call_payload=None):
        lim = limits or self.limits
        if scale != 1.0:
            lim = lim.with_(cpu_seconds=lim.cpu_seconds * scale, wall_seconds=lim.wall * scale)
        ex = run(self, req, stdin, lim, call_payload)
        if log:
            _record(log, req, lim, ex)
        return ex

    knob_run.slow_machine = True
    Sandbox._run = knob_run
    return True


def _record(log: str, req: dict, lim, ex) -> None:
    cpu, wall = ex.cpu_seconds / lim.cpu_seconds, ex.wall_seconds / lim.wall
    if max(cpu, wall) <= RECORD_ABOVE:
        return
    argv = req.get("argv") or [req.get("mode", "?")]
    line = json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0],
                       "run": " ".join(str(a) for a in argv)[:120], "status": ex.status.value,
                       "cpu": round(ex.cpu_seconds, 3), "cpu_limit": lim.cpu_seconds,
                       "wall": round(ex.wall_seconds, 3), "wall_limit": lim.wall})
    with open(log, "a", encoding="utf-8") as f:  # one short append per line: lines from processes do not mix
        f.write(line + "\n")


try:
    install()
except ImportError:  # a Python without arbiter (e.g. another venv): nothing to wrap
    pass
