"""Routing by ``data_source``: which checker, limits and Python prelude a row is judged with.

Every code source goes to the sandbox judge with a default per source family (:data:`ROUTES`;
any other name containing ``code`` gets strict defaults); a non-code source (``gsm8k``,
``math``) is refused with ``ValueError``, as verl's own router refuses what it does not know.
Every route gives 1024 MiB per case and a wall limit of ``2 * CPU + 1`` s. A row's own
``extra_info.time_limit`` replaces the route's CPU limit
(:func:`arbiter.rewards.codegen.row_time_limit`).
The table, and why each family is judged as it is (letters (a)-(g) below), with where arbiter is
stricter or looser than each peer: ``docs/codegen.md`` ("Routing by data_source").
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from typing import Any

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.preludes import PYTHON_PRELUDE, scrub_prelude
from arbiter.sandbox.limits import Limits, MiB


DEFAULT_MEMORY_MIB = 1024


@dataclass(frozen=True)
class Route:
    """How rows of one ``data_source`` family are judged.

    - ``family``: the canonical family name (``code_contests``, ``codeforces``, ``taco``,
      ``primeintellect``, ``livecodebench``, ``leetcode``, ``code``).
    - ``checker``: stdout comparison (and ``abs_tol``/``rel_tol``/``strict_bool`` for call-based
      values).
    - ``limits``: per-case limits (CPU seconds, memory bytes; wall ``2 * cpu + 1`` s).
    - ``prelude``: Python run before the program in the same namespace.
    - ``int_keys``: call cases get APPS/TACO ``testing_util``'s int dict keys (a dict first
      argument and a dict output; docs/codegen.md (c)), decided here, by the row's source.
    - ``why``: the reference behaviour this default follows (docs/codegen.md, letter).
    """

    family: str
    checker: CheckerSpec
    limits: Limits
    prelude: str = PYTHON_PRELUDE
    why: str = ""
    int_keys: bool = False

    def with_overrides(self, *, checker: str | None = None, case_insensitive: bool | None = None,
                       abs_tol: float | None = None, rel_tol: float | None = None,
                       time_limit: float | None = None, memory_limit_mb: int | None = None) -> "Route":
        """A copy with user overrides (``reward_kwargs``) applied; ``None`` keeps the default.

        ``time_limit``: CPU seconds per case; ``memory_limit_mb``: MiB per case. Raises
        ``ValueError`` for an unknown checker name or a non-positive limit.
        """
        spec = self.checker
        changes: dict[str, Any] = {}
        if checker is not None:
            changes["name"] = checker
        if case_insensitive is not None:
            changes["case_insensitive"] = bool(case_insensitive)
        if abs_tol is not None:
            changes["abs_tol"] = float(abs_tol)
        if rel_tol is not None:
            changes["rel_tol"] = float(rel_tol)
        if changes:
            spec = replace(spec, **changes)
            if spec.name == "external":
                raise ValueError("checker 'external' needs a checker program; not available through compute_score")
        if not changes and time_limit is None and memory_limit_mb is None:
            return self
        limits = self.limits
        if time_limit is not None:
            limits = limits.with_(cpu_seconds=float(time_limit))
        if memory_limit_mb is not None:
            limits = limits.with_(memory_bytes=int(memory_limit_mb) * MiB)
        return replace(self, checker=spec, limits=limits)


def _limits(cpu: float) -> Limits:
    return Limits(cpu_seconds=cpu, memory_bytes=DEFAULT_MEMORY_MIB * MiB)


#: Codeforces' usual real-number tolerance (testlib ``rcmp6`` / ``doubleCompare`` with 1e-6), docs/codegen.md (a)/(b).
CODEFORCES_TOL = 1e-6

_CODE_CONTESTS = Route("code_contests", CheckerSpec("tokens_float", abs_tol=CODEFORCES_TOL, rel_tol=CODEFORCES_TOL),
                       _limits(5), why="(a) CodeContests-O validator -> problem checker: testlib wcmp / rcmp6")
_CODEFORCES = Route("codeforces", CheckerSpec("tokens_float", abs_tol=CODEFORCES_TOL, rel_tol=CODEFORCES_TOL),
                    _limits(5), why="(b) Codeforces checkers: wcmp tokens, rcmp6 / doubleCompare 1e-6")
_TACO = Route("taco", CheckerSpec("tokens_float", abs_tol=1e-6, rel_tol=1e-6, strict_bool=False), _limits(5),
              why="(c) TACO/APPS testing_util, rllm, prime_code (all looser)", int_keys=True)
_PRIME = Route("primeintellect", CheckerSpec("tokens_float", abs_tol=1e-6, rel_tol=1e-6, strict_bool=False),
               _limits(5), why="(c) rllm primeintellect -> TACO path, prime_code", int_keys=True)
#: The real-number tolerance AtCoder and LeetCode statements grant (1e-6 absolute or relative, some 1e-5), docs/codegen.md (d).
LCB_TOL = 1e-6

_LCB = Route("livecodebench", CheckerSpec("tokens_float", abs_tol=LCB_TOL, rel_tol=LCB_TOL), _limits(6),
             why="(d) LiveCodeBench problems' own tolerance (AtCoder/LeetCode 1e-6), 6 s")
_LEETCODE = Route("leetcode", CheckerSpec("tokens", abs_tol=1e-6, rel_tol=1e-6), _limits(5),
                  why="(e) LeetCodeDataset check() / LeetCode judge 1e-5")
_CODE = Route("code", CheckerSpec("tokens"), _limits(5), why="(f) unknown code source: strict defaults")

#: Known ``data_source`` names (lower-case) and their routes.
ROUTES: dict[str, Route] = {
    "code_contests_o": _CODE_CONTESTS,
    "codecontests": _CODE_CONTESTS,
    "code_contests": _CODE_CONTESTS,
    "codeforces": _CODEFORCES,
    "code_codeforces": _CODEFORCES,
    "code_taco": _TACO,
    "taco": _TACO,
    "apps": _TACO,
    "code_apps": _TACO,
    "code_primeintellect": _PRIME,
    "primeintellect": _PRIME,
    "code_lcbv5": _LCB,
    "livecodebench": _LCB,
    "lcb": _LCB,
    "leetcode": _LEETCODE,
    "code_leetcode": _LEETCODE,
}


#: Stems of known sources a name may vary (``code_lcbv6``, ``deepmind/code_contests``): such a name gets
#: the default route, with a warning once per process (:func:`_warn_near_miss`).
_STEMS = {"lcb": "code_lcbv5", "livecodebench": "livecodebench", "codeforces": "codeforces",
          "code_contests": "code_contests", "primeintellect": "primeintellect", "taco": "taco", "apps": "apps",
          "leetcode": "leetcode"}
_warned: set[str] = set()
_warned_lock = threading.Lock()


def _warn_near_miss(name: str) -> None:
    """Warn (once per name) that ``name``, unknown but naming a known source, gets the default route."""
    known = next((known for stem, known in _STEMS.items() if stem in name), None)
    if known is None:
        return
    with _warned_lock:
        if name in _warned or len(_warned) > 1000:
            return
        _warned.add(name)
    logging.getLogger("arbiter.rewards").warning(
        "data_source %r is not a known name: it gets the default route (exact tokens, strict booleans), not the "
        "route of %r (docs/codegen.md (f)); name it %r, or pass the checker options", name, known, known)


def route(data_source: Any) -> Route:
    """The :class:`Route` for a row's ``data_source`` (case-insensitive, surrounding spaces ignored).

    Known names are in :data:`ROUTES`; any other name containing ``code`` gets the strict default
    route (the card: "every value contains code, so the verl reward router dispatches it to the
    sandbox execution checker"), with a warning once when it names a known source
    (``code_lcbv6``). Raises ``ValueError`` naming the data_source for anything else
    (``gsm8k``, ``math``, ``None``): arbiter never scores a non-code row by running it.
    """
    if isinstance(data_source, bytes):  # some Arrow paths hand strings over as bytes
        data_source = data_source.decode("utf-8", "replace")
    # numpy.str_ (verl's non_tensor_batch) is a str subclass
    name = str(data_source).strip().lower() if isinstance(data_source, str) else None
    if name in ROUTES:
        return ROUTES[name]
    if name and "code" in name:
        _warn_near_miss(name)
        return _CODE
    known = ", ".join(sorted(ROUTES))
    raise ValueError(
        f"data_source {data_source!r} is not a code-execution source: arbiter's reward only judges programs "
        f"(known: {known}, or any name containing 'code'); route other sources to another scorer"
    )


__all__ = ["CODEFORCES_TOL", "DEFAULT_MEMORY_MIB", "LCB_TOL", "PYTHON_PRELUDE", "ROUTES", "Route", "route", "scrub_prelude"]
