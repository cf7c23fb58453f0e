"""The verdict key: a digest of everything that decides a submission's verdict.

The program's exact bytes, the language and its toolchain fingerprint, the test suite (every
case's name, input and accepted answers), the limits, the checker and its options, the scoring
mode, ``run_all``, the compile spec, the prelude, the case order in force, the sandbox
configuration and arbiter's own code. Never the task's label. See ``docs/step.md``.
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading
import weakref
from dataclasses import asdict
from pathlib import Path
from typing import Any

from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, StdioCase, TestSuite
from arbiter.languages.registry import get_language
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.sandbox import limits_regime

#: Bumped when the key's recipe or the stored verdict's shape changes.
KEY_VERSION = 1
#: ``case_order`` values: ``failures_first`` (docs/step.md) or ``suite`` (the suite's order).
CASE_ORDERS = ("failures_first", "suite")


class _Digest:
    """Length-prefixed fields into sha256, so no two different field lists give one stream."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def add(self, tag: bytes, data: bytes) -> None:
        self.h.update(tag + len(data).to_bytes(8, "little") + data)

    def text(self, tag: bytes, value: str) -> None:
        self.add(tag, value.encode("utf-8", "surrogatepass"))

    def value(self, v: Any) -> None:
        """A JSON-like value with its types: ``1``, ``1.0``, ``True``, ``"1"``, ``[1]`` and ``(1,)``
        all differ. Raises ``RecursionError`` for a value nested too deep."""
        if v is None or isinstance(v, bool):
            self.add(b"k", repr(v).encode())
        elif isinstance(v, int):
            self.add(b"i", v.to_bytes(v.bit_length() // 8 + 1, "little", signed=True))
        elif isinstance(v, float):
            self.add(b"f", (v.hex() if math.isfinite(v) else repr(v)).encode())
        elif isinstance(v, str):
            self.text(b"s", v)
        elif isinstance(v, (bytes, bytearray)):
            self.add(b"b", bytes(v))
        elif isinstance(v, (list, tuple)):
            self.add(b"L" if isinstance(v, list) else b"T", str(len(v)).encode())
            for x in v:
                self.value(x)
        elif isinstance(v, dict):
            self.add(b"D", str(len(v)).encode())
            for k, x in v.items():
                self.value(k)
                self.value(x)
        else:
            self.text(b"o", f"{type(v).__module__}.{type(v).__qualname__}:{v!r}")

    def hexdigest(self) -> str:
        return self.h.hexdigest()


def _case(d: _Digest, case: StdioCase | CallCase) -> None:
    if isinstance(case, StdioCase):
        d.text(b"S", case.name)
        d.add(b"in", case.stdin)
        d.value(case.expected)
    else:
        d.text(b"C", case.name)
        d.text(b"fn", case.fn_name)
        d.value(case.args)
        d.value(case.kwargs)
        d.value(case.expected)
        if case.node_args is not None:  # the row's LeetCode node types (how arguments are built)
            d.add(b"nodes", b"")
            d.value(case.node_args)
            d.value(case.node_return)
        if case.int_keys:  # the route's APPS/TACO rule (the first argument's keys made ints)
            d.add(b"int_keys", b"")


_digests: dict[int, tuple[weakref.ref, str]] = {}
_digests_lock = threading.Lock()
_DIGESTS_KEPT = 256


def suite_digest(suite: TestSuite) -> str:
    """sha256 (hex) of every case of ``suite`` in order: name, input and accepted answers (its
    ``origin`` is not part of it). Computed once per suite object while it lives. Raises
    ``RecursionError`` for a value nested too deep to walk."""
    with _digests_lock:
        hit = _digests.get(id(suite))
        if hit is not None and hit[0]() is suite:
            return hit[1]
    d = _Digest()
    d.add(b"n", str(len(suite.cases)).encode())
    for case in suite.cases:
        _case(d, case)
    digest = d.hexdigest()
    with _digests_lock:
        if len(_digests) >= _DIGESTS_KEPT:
            _digests.pop(next(iter(_digests)))
        _digests[id(suite)] = (weakref.ref(suite), digest)
    return digest


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 of arbiter's own source (every file of the installed package but bytecode caches:
    its data files too, such as the ``cpu_online`` the sandbox shows programs), read once per
    process: a verdict stored on disk by another version of the judge is never reused."""
    root = Path(__file__).resolve().parents[2]
    d = _Digest()
    for path in sorted(p for p in root.rglob("*")
                       if p.is_file() and "__pycache__" not in p.relative_to(root).parts and p.suffix != ".pyc"):
        d.text(b"p", path.relative_to(root).as_posix())
        d.add(b"c", path.read_bytes())
    return d.hexdigest()


@functools.lru_cache(maxsize=64)
def _environment(language: str, compile_spec: Any, config: SandboxConfig) -> str | None:
    lang = get_language(language)
    if lang is None:
        return None
    toolchain = lang.fingerprint(compile_spec, config)
    if toolchain is None:
        return None
    return repr((sorted(asdict(config).items()), toolchain))


def effective_order(task: Task, case_order: str) -> str:
    """The case order a task is judged in: ``failures_first`` only applies to all-or-nothing
    scoring that stops at the first failure; every other task keeps the suite's order."""
    if case_order not in CASE_ORDERS:
        raise ValueError(f"case_order must be one of {CASE_ORDERS}, got {case_order!r}")
    stops = task.scoring == "all_or_nothing" and not task.run_all
    return case_order if stops else "suite"


def verdict_key(task: Task, config: SandboxConfig | None = None, case_order: str = "suite") -> str | None:
    """The key of ``task``'s verdict (hex sha256), or ``None`` when the task must not be reused
    (an unknown language, a toolchain that cannot be told, a value too deep to walk)."""
    config = config if config is not None else SandboxConfig()
    env = _environment(task.language, task.compile, config)
    if env is None:
        return None
    d = _Digest()
    d.text(b"v", f"{KEY_VERSION}:{code_digest()}")
    d.text(b"lang", task.language)
    d.text(b"env", env)
    d.text(b"regime", limits_regime())
    d.text(b"src", task.source)
    try:
        d.text(b"suite", suite_digest(task.suite))
    except RecursionError:
        return None
    d.text(b"lim", repr(task.limits))  # a dataclass's repr: every field, by name
    d.text(b"chk", repr(task.checker))
    d.text(b"score", f"{task.scoring}:{task.run_all}:{effective_order(task, case_order)}")
    d.text(b"cc", repr(task.compile))
    d.text(b"pre", task.prelude)
    return d.hexdigest()


__all__ = ["CASE_ORDERS", "KEY_VERSION", "code_digest", "effective_order", "suite_digest", "verdict_key"]
