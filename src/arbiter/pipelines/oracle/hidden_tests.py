"""Hidden tests checked against the seed's ``source_code`` before any answer is judged on them.

:func:`check_hidden_tests` judges the source on every hidden case: ``AC`` cases are kept, ``WA``/``RE``/``OLE``
cases are dropped as bad data, ``TLE``/``MLE`` cases are kept unconfirmed. Cached per task and hidden suite.
See ``docs/oracle.md`` ("Hidden tests").
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from arbiter.sandbox.limits import Limits

__all__ = [
    "CACHE_SUBDIR",
    "HiddenCheck",
    "HiddenCheckError",
    "SOURCE_TIME_FACTOR",
    "check_hidden_tests",
    "source_check_limits",
]

#: Bumped when the stored format or the meaning of a cached check changes.
CACHE_VERSION = 1
CACHE_SUBDIR = "oracle_hidden_checks"
#: The source's CPU limit on hidden cases is this many times the seed's ``run.timeout_sec`` (wall ``2 t + 1``).
SOURCE_TIME_FACTOR = 5.0
#: Source verdicts that prove a hidden case wrong (dropped) / leave it unconfirmed (kept).
BAD_OUTCOMES = ("WA", "RE", "OLE")
UNCONFIRMED_OUTCOMES = ("TLE", "MLE")


class HiddenCheckError(RuntimeError):
    """The task's hidden tests cannot be checked because of the task itself: its ``source_code`` does not compile
    with its own command, or the command is refused (``INVALID_TASK``). Our own failures raise
    :class:`~arbiter.sandbox.sandbox.SandboxError` / ``ToolchainUnavailable`` instead."""


@dataclass
class HiddenCheck:
    """The source's verdict on one task's hidden cases.

    - ``kept``: names of the cases answers are judged on (confirmed + unconfirmed), in file order.
    - ``dropped``: ``{"name", "outcome", "detail"}`` per case the source fails (bad data).
    - ``unconfirmed``: the same for cases the source could not finish (kept as given).
    - ``total``; ``key`` (cache key); ``cached``; ``seconds`` (wall seconds of this call).
    """

    task_id: str
    total: int
    kept: list[str]
    dropped: list[dict[str, str]] = field(default_factory=list)
    unconfirmed: list[dict[str, str]] = field(default_factory=list)
    key: str = ""
    cached: bool = False
    seconds: float = 0.0

    @property
    def all_bad(self) -> bool:
        """True when every hidden case was dropped: the task has no usable hidden suite."""
        return self.total > 0 and not self.kept

    def summary(self) -> dict[str, Any]:
        """JSON-ready: task, counts, the dropped and unconfirmed cases (no test data)."""
        return {"task_id": self.task_id, "total": self.total, "kept": len(self.kept), "dropped": self.dropped,
                "unconfirmed": self.unconfirmed, "all_bad": self.all_bad, "cached": self.cached,
                "seconds": round(self.seconds, 3)}


def source_check_limits(seed: Any) -> Limits:
    """The limits of the source's runs on hidden cases: the seed's run limits
    (:func:`~arbiter.pipelines.oracle.generated_tests.seed_run_limits`) with CPU ``SOURCE_TIME_FACTOR x
    run.timeout_sec`` seconds and wall ``2 x`` that ``+ 1``."""
    from arbiter.pipelines.oracle.generated_tests import seed_run_limits

    base = seed_run_limits(seed)
    cpu = float(seed.run.timeout_sec) * SOURCE_TIME_FACTOR
    return base.with_(cpu_seconds=cpu, wall_seconds=2 * cpu + 1.0)


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


_locks_guard = threading.Lock()
_locks: dict[str, threading.Lock] = {}


def _lock_for(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def check_hidden_tests(seed: Any, cases: Sequence[Any], checker: Any, *, cache_dir: str | Path | None = None,
                       use_cache: bool = True, config: Any = None) -> HiddenCheck:
    """Run ``seed.source_code`` on each hidden case and sort the cases (module docstring).

    - ``seed``: a :class:`~arbiter.datasets.oracle.SeedRow`; ``cases``: its hidden cases (objects with ``name``,
      ``stdin``, ``stdout`` strings, :class:`~arbiter.datasets.oracle.TestCaseIO`), at least one;
      ``checker``: the seed's :class:`~arbiter.checkers.spec.CheckerSpec`.
    - ``cache_dir``: default ``<cache root>/oracle_hidden_checks``; ``use_cache=False`` neither reads nor writes it.

    Returns a :class:`HiddenCheck`. Raises :class:`HiddenCheckError` (task error), ``SandboxError`` /
    ``ToolchainUnavailable`` (ours), ``ValueError`` for zero cases.
    """
    from arbiter.judge.encodings._common import str_to_bytes
    from arbiter.judge.judge import judge
    from arbiter.judge.task import Task
    from arbiter.judge.testsuite import StdioCase, TestSuite
    from arbiter.judge.verdict import Outcome
    from arbiter.languages.compile_cache import cache_root
    from arbiter.judge.build import CompileCommandError, build_cpp
    from arbiter.pipelines.oracle.generated_tests import store_suite, seed_compile_spec
    from arbiter.sandbox.sandbox import SandboxError

    t0 = time.monotonic()
    if not cases:
        raise ValueError(f"task {seed.task_id}: no hidden case to check")
    spec = seed_compile_spec(seed)
    try:
        comp = build_cpp(seed.source_code, spec)
    except CompileCommandError as exc:
        raise HiddenCheckError(f"task {seed.task_id}: compile command refused: {exc}") from exc
    if not comp.ok:
        raise HiddenCheckError(f"task {seed.task_id}: the seed's source_code does not compile with its own command, "
                               f"so its hidden tests cannot be checked: {comp.message[:500]}")
    limits = source_check_limits(seed)
    data = [(c.name, str_to_bytes(c.stdin), str_to_bytes(c.stdout)) for c in cases]
    raw = json.dumps([CACHE_VERSION, seed.task_id, _sha(seed.source_code.encode("utf-8", "surrogatepass")),
                      spec.command, comp.toolchain.fingerprint, checker.name, bool(checker.case_insensitive),
                      [limits.cpu_seconds, limits.wall_seconds, limits.memory_bytes, limits.output_bytes],
                      [[n, _sha(i), _sha(o)] for n, i, o in data]], separators=(",", ":"))
    key = _sha(raw.encode())
    root = Path(cache_dir) if cache_dir is not None else cache_root() / CACHE_SUBDIR
    path = root / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', seed.task_id)[:80]}-{key[:32]}.json"
    with _lock_for(key):
        hit = _cached(path, key, seed.task_id, t0) if use_cache else None
        if hit is not None:
            return hit
        suite = TestSuite(tuple(StdioCase(n, i, (o,)) for n, i, o in data), origin="oracle:hidden-check")
        task = Task(language="cpp", source=seed.source_code, suite=suite, limits=limits, checker=checker,
                    scoring="fraction", run_all=True, compile=spec, task_id=f"{seed.task_id}:hidden-check")
        v = judge(task, config=config)
        if v.outcome is Outcome.SANDBOX_ERROR:
            raise SandboxError(f"checking the hidden tests of {seed.task_id} against its source: {v.reason}")
        if v.outcome in (Outcome.CE, Outcome.INVALID_TASK) or len(v.cases) != len(data):
            raise HiddenCheckError(f"task {seed.task_id}: the source could not be run on its hidden tests: "
                                   f"{v.outcome.value}: {v.reason}")
        kept, dropped, unconfirmed = _sort_cases(v.cases)
        check = HiddenCheck(task_id=seed.task_id, total=len(data), kept=kept, dropped=dropped,
                            unconfirmed=unconfirmed, key=key)
        if use_cache:
            store_suite(path, {"version": CACHE_VERSION, "key": key, "total": check.total, "kept": kept,
                                "dropped": dropped, "unconfirmed": unconfirmed})
        check.seconds = time.monotonic() - t0
        return check


def _cached(path: Path, key: str, task_id: str, t0: float) -> HiddenCheck | None:
    """The stored check of ``key``, or ``None`` (absent or unreadable: checked again and overwritten)."""
    if not path.is_file():
        return None
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        if d.get("version") == CACHE_VERSION and d.get("key") == key:
            return HiddenCheck(task_id=task_id, total=int(d["total"]), kept=list(d["kept"]),
                               dropped=list(d["dropped"]), unconfirmed=list(d["unconfirmed"]), key=key,
                               cached=True, seconds=time.monotonic() - t0)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _sort_cases(results: Sequence[Any]) -> tuple[list[str], list[dict[str, str]], list[dict[str, str]]]:
    """``(kept, dropped, unconfirmed)`` from the source's case results."""
    from arbiter.judge.verdict import Outcome

    kept: list[str] = []
    dropped: list[dict[str, str]] = []
    unconfirmed: list[dict[str, str]] = []
    for r in results:
        detail = (r.diff or r.detail or "").strip().replace("\n", " ")[:300]
        entry = {"name": r.name, "outcome": r.outcome.value, "detail": detail}
        if r.outcome is Outcome.AC:
            kept.append(r.name)
        elif r.outcome.value in BAD_OUTCOMES:
            dropped.append(entry)
        else:  # TLE / MLE (or anything that is no evidence against the expected output): kept as given
            kept.append(r.name)
            unconfirmed.append(entry)
    return kept, dropped, unconfirmed
