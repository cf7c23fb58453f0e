"""Sandbox configuration: which interpreter runs untrusted Python, and whether isolation is on."""

from __future__ import annotations

import functools
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: The loud opt-in for running untrusted code without isolation (no namespaces, no bwrap).
UNSAFE_ENV = "ARBITER_UNSAFE_NO_ISOLATION"
UNSAFE_VALUE = "I_UNDERSTAND_UNTRUSTED_CODE_RUNS_ON_THIS_HOST"
#: Override the interpreter used for untrusted Python (a path on this machine).
PYTHON_ENV = "ARBITER_SANDBOX_PYTHON"

SANDBOX_UID = 65534  # nobody: owns no files on a Debian host


def _default_python() -> str:
    env = os.environ.get(PYTHON_ENV)
    if env:
        return env
    # Debian's interpreter lives under /usr, which the sandbox already sees read-only, starts fast
    # (no .pth files, no pyenv shim) and exposes nothing under $HOME.
    for cand in ("/usr/bin/python3",):
        if os.access(cand, os.X_OK):
            return cand
    return os.path.realpath(sys.executable)


@functools.lru_cache(maxsize=None)
def _bwrap() -> str:
    """The bubblewrap binary on PATH (looked up once: every judged submission builds a config)."""
    return shutil.which("bwrap") or "/usr/bin/bwrap"


@functools.lru_cache(maxsize=64)
def _default_site(python: str) -> tuple[str, ...]:
    if os.path.realpath(python).startswith("/usr/bin/python3"):
        d = "/usr/lib/python3/dist-packages"
        if os.path.isdir(d):
            return (d,)
    return ()


def unsafe_requested() -> bool:
    """True when the loud opt-in for running without isolation is set exactly."""
    return os.environ.get(UNSAFE_ENV) == UNSAFE_VALUE


@dataclass(frozen=True)
class SandboxConfig:
    """How sandboxes are built on this machine.

    - ``python``: the interpreter for untrusted Python code (default ``/usr/bin/python3``; override
      with ``$ARBITER_SANDBOX_PYTHON``). It is started with ``-I -S -B -X utf8``: no site-packages,
      no environment variables, UTF-8 stdio.
    - ``isolated``: run inside bubblewrap namespaces. ``False`` only with
      ``ARBITER_UNSAFE_NO_ISOLATION=I_UNDERSTAND_UNTRUSTED_CODE_RUNS_ON_THIS_HOST``.
    - ``bwrap``: path of the bubblewrap binary.
    - ``uid`` / ``gid``: the uid/gid programs see inside the sandbox; when arbiter runs as root,
      each sandbox runs as a host uid of its own (:mod:`arbiter.sandbox.hostuid`) and group ``gid``.
    - ``extra_ro_binds``: more host paths to show read-only at the same path (e.g. an interpreter
      that lives outside ``/usr``).
    - ``python_site``: directories appended to the untrusted interpreter's ``sys.path``. Default,
      for Debian's python3: ``/usr/lib/python3/dist-packages``, where ``make`` installs
      ``python3-numpy`` and ``python3-sortedcontainers`` (LeetCode's preamble imports
      ``sortedcontainers``; AtCoder-style and TACO-harness programs use ``numpy``).
    """

    python: str = field(default_factory=_default_python)
    isolated: bool = field(default_factory=lambda: not unsafe_requested())
    bwrap: str = field(default_factory=_bwrap)
    uid: int = SANDBOX_UID
    gid: int = SANDBOX_UID
    extra_ro_binds: tuple[str, ...] = ()
    python_site: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.python_site is None:
            object.__setattr__(self, "python_site", _default_site(self.python))

    def python_ro_binds(self) -> tuple[str, ...]:
        """Host directories the sandbox must see for ``python`` to start."""
        real = Path(os.path.realpath(self.python))
        if str(real).startswith("/usr/"):
            return ()
        return (str(real.parent.parent),)  # <prefix>/bin/python3 -> <prefix>
