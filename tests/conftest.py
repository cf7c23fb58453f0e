"""Shared test fixtures. Tests run real programs in the real sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ARBITER_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared() -> Path:
    """The ../shared folder (specs, seed, real data); tests that need it are skipped without it."""
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


def _slow_machine() -> None:
    """``ARBITER_TEST_LIMIT_SCALE`` (tests/slow_machine/sitecustomize.py): scale every sandbox run's
    CPU and wall limits, here and in the ``arbiter`` commands the tests start."""
    if not os.environ.get("ARBITER_TEST_LIMIT_SCALE"):
        return
    import importlib.util

    knob = REPO / "tests" / "slow_machine"
    spec = importlib.util.spec_from_file_location("arbiter_slow_machine", knob / "sitecustomize.py")
    spec.loader.exec_module(importlib.util.module_from_spec(spec))  # installs itself
    os.environ["PYTHONPATH"] = os.pathsep.join([str(knob), *filter(None, [os.environ.get("PYTHONPATH")])])


_slow_machine()
