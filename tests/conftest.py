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
