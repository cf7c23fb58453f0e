"""Shared test fixtures. Tests run real programs in the real sandbox.

The folders mirror the packages of ``src/arbiter``; shared helpers (``checkers_reference``,
``parsers_reference``, ``oracle_fake_server``) and the corpora (``hostile/``, ``cheats/``) stay here.
Test modules import helpers and each other by basename, so every basename is unique.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ARBITER_SHARED", REPO.parent / "shared"))
TESTS = Path(__file__).resolve().parent
for _folder in [TESTS, *sorted(d for d in TESTS.iterdir() if d.is_dir() and any(d.glob("test_*.py")))]:
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared reference folder (specs, seed, real data; ``ARBITER_SHARED``); tests that need it are skipped without it."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} not found")
    return SHARED


@pytest.fixture
def default_int_limit():
    """CPython's default 4300-digit int/str limit (as a judge process runs), restored afterwards:
    tests of integers beyond 4300 digits must not pass only because the limit was lifted."""
    import sys

    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    yield
    sys.set_int_max_str_digits(old)


@pytest.fixture
def one_sandbox_pool():
    """The default pool, replaced by a new one keeping a single idle sandbox (a submission can
    only get the one before's), started fresh for each test (counters start at zero)."""
    from arbiter.sandbox import pool as pool_module
    from arbiter.sandbox.pool import SandboxPool

    saved = pool_module._default
    pool_module._default = SandboxPool(max_sandboxes=2, max_idle_per_key=1, spares=0)
    yield pool_module._default
    pool_module._default.close()
    pool_module._default = saved


def _slow_machine() -> None:
    """The knobs of tests/slow_machine/sitecustomize.py (``ARBITER_TEST_LIMIT_SCALE``, ``ARBITER_TEST_LIMIT_LOG``),
    here and in the ``arbiter`` commands the tests start."""
    if not (os.environ.get("ARBITER_TEST_LIMIT_SCALE") or os.environ.get("ARBITER_TEST_LIMIT_LOG")):
        return
    import importlib.util

    if os.environ.get("ARBITER_TEST_LIMIT_LOG"):
        Path(os.environ["ARBITER_TEST_LIMIT_LOG"]).write_text("")  # this session's runs only
    knob = REPO / "tests" / "slow_machine"
    spec = importlib.util.spec_from_file_location("arbiter_slow_machine", knob / "sitecustomize.py")
    spec.loader.exec_module(importlib.util.module_from_spec(spec))  # installs itself
    os.environ["PYTHONPATH"] = os.pathsep.join([str(knob), *filter(None, [os.environ.get("PYTHONPATH")])])


_slow_machine()


def pytest_terminal_summary(terminalreporter) -> None:
    """With ``ARBITER_TEST_LIMIT_LOG``: the tests whose runs ended in time but closest to a limit."""
    log = os.environ.get("ARBITER_TEST_LIMIT_LOG")
    if not log or not Path(log).is_file():
        return
    import json

    worst: dict[str, tuple[float, dict]] = {}
    for line in Path(log).read_text().splitlines():
        r = json.loads(line)
        if r["status"] == "time_limit":
            continue  # meant to spin past it (a test expecting it in time fails on its own)
        frac = max(r["cpu"] / r["cpu_limit"], r["wall"] / r["wall_limit"])
        if frac > worst.get(r["test"], (0.0, r))[0]:
            worst[r["test"]] = (frac, r)
    tr = terminalreporter
    tr.section("runs closest to their limits (ARBITER_TEST_LIMIT_LOG)")
    if not worst:
        tr.write_line("no run that ended in time used more than a fifth of a limit")
    for frac, r in sorted(worst.values(), key=lambda x: -x[0])[:30]:
        tr.write_line(f"{frac:5.0%}  cpu {r['cpu']:.2f}/{r['cpu_limit']:g} s  wall {r['wall']:.2f}/{r['wall_limit']:g} s  "
                      f"{r['status']}  {r['test']}  [{r['run'][:60]}]")
