"""Test-only knob ``ARBITER_TEST_LIMIT_SCALE``: play a slower machine (docs/CONTRIBUTING.md).

When the variable is set (e.g. ``0.5``), every run in a sandbox gets its CPU and wall limits
multiplied by it (compiles, checkers, measurements and programs alike), as if the machine were
``1/scale`` times slower; a test that then fails depends on the machine's speed. ``tests/conftest.py``
installs it in the pytest process and puts this folder on ``PYTHONPATH``, so the ``arbiter``
commands the tests start get it too (as ``sitecustomize``). The product never reads the variable.
"""

from __future__ import annotations

import os

ENV = "ARBITER_TEST_LIMIT_SCALE"


def install() -> float | None:
    """Wrap ``Sandbox._run`` to scale its limits; returns the scale, or None when the knob is unset."""
    raw = os.environ.get(ENV)
    if not raw:
        return None
    scale = float(raw)
    if not 0 < scale <= 1:
        raise ValueError(f"{ENV} must be in (0, 1], got {raw!r}")
    from arbiter.sandbox.sandbox import Sandbox

    run = Sandbox._run
    if getattr(run, "limit_scale", None) is not None:
        return scale

    def scaled_run(self, req, stdin, limits, call_payload=None):
        lim = limits or self.limits
        lim = lim.with_(cpu_seconds=lim.cpu_seconds * scale, wall_seconds=lim.wall * scale)
        return run(self, req, stdin, lim, call_payload)

    scaled_run.limit_scale = scale
    Sandbox._run = scaled_run
    return scale


try:
    install()
except ImportError:  # a Python without arbiter (e.g. another venv): nothing to scale
    pass
