"""Routing by ``data_source``: which checker, limits and Python prelude a row is judged with.

verl passes each row's ``data_source`` to the reward function (``data.reward_fn_key``, default
``data_source``); verl's own ``default_compute_score`` routes ``codecontests``/``apps``/
``codeforces``/``taco`` to ``prime_code`` or ``sandbox_fusion`` and raises
``NotImplementedError`` for anything it does not know (``reference/verl_reward.md`` section 2).
arbiter routes every code source to the sandbox judge, with a default per source family:

| data_source | checker | CPU s / case | why |
|---|---|---|---|
| ``code_contests_o``, ``codecontests``, ``code_contests`` | ``tokens_float`` 1e-6 | 5 | (a) |
| ``codeforces``, ``code_codeforces`` | ``tokens_float`` 1e-6 | 5 | (b) |
| ``code_taco``, ``taco``, ``apps``, ``code_apps`` | ``tokens_float`` 1e-6; call results: ``True == 1`` | 5 | (c) |
| ``code_primeintellect``, ``primeintellect`` | ``tokens_float`` 1e-6; call results: ``True == 1`` | 5 | (c) |
| ``code_lcbv5``, ``livecodebench``, ``lcb`` | ``tokens_float`` 1e-6; call results: ``bool`` only ``bool`` | 6 | (d) |
| ``leetcode``, ``code_leetcode`` | ``tokens`` (call-based: JSON values, floats 1e-6, ``bool`` only ``bool``) | 5 | (e) |
| any other name containing ``code`` | ``tokens`` | 5 | (f) |
| anything else (``gsm8k``, ``math``, ...) | refused: ``ValueError`` | | (g) |

A row's own ``extra_info.time_limit`` (written by ``arbiter convert`` from the row's reference
solution, :mod:`arbiter.verl.references`: twice its slowest case, never below the route's CPU
limit) replaces the route's CPU limit (:func:`arbiter.verl.reward.row_time_limit`).

Every route: 1024 MiB memory per case (verl ``sandbox_fusion``'s ``memory_limit_mb`` default;
``prime_code`` has no memory limit at all), wall limit ``2 * CPU + 1`` s (the judge's default),
the program runs on Debian's ``python3`` (3.11) inside the sandbox: the standard library plus
the Debian packages ``make`` installs (``python3-numpy``, ``python3-sortedcontainers``; no pandas,
which rllm's TACO block also imports), with the import prelude :data:`PYTHON_PRELUDE` (below)
unless the row brings its own (``extra_info.prelude``).

Why, and where arbiter is stricter or looser than the peer (never looser in a way that accepts
a wrong value the problem's own judge would reject; the one spelling caveat is in (a)):

(a) CodeContests-O's validator lower-cases both outputs and compares line-wise ignoring trailing
    whitespace, and only when that fails runs the problem's testlib checker (default run timeout
    20 s; ``reference/codegen_harnesses.md`` section 3). The verl rows carry no checker, and the
    problems are Codeforces-style, so the route stands in for that checker fallback with the
    Codeforces conventions of (b): whitespace-separated tokens (testlib ``wcmp`` and friends; so
    it is looser than the validator's first pass only where the peer's checker fallback is too),
    and numbers within 1e-6 absolute or relative, which is what the real-valued problems' checkers
    accept (testlib ``rcmp6``, and ``doubleCompare`` with ``EPS = 1e-6`` in the problems' own
    checkers). Without a tolerance a correct ``0.5000000000`` or ``0.49999999999`` for an
    expected ``0.500000`` would be a false fail. Integer and string answers gain nothing: an
    expected plain-integer token takes only a number of exactly its value, and a non-numeric
    token must be byte-equal (:mod:`arbiter.checkers.numbers`).
    **Stricter**: no case folding (the validator's lower-casing would accept ``alice`` for
    ``Alice`` in a case-sensitive problem); pass ``case_insensitive=True`` for parity. Stricter
    than ``rcmp6`` where the expected token is an integer (``rcmp6`` reads every token as a double
    and would accept ``3.0000001`` for ``3``; a problem that prints integers is not judged with a
    tolerance on them). **Looser** than ``wcmp`` in one spelling only: an integer token of the
    exact value written differently (``6.0``, ``06``, ``+6``, ``6e0`` for ``6``) passes, which a
    ``wcmp``-judged integer problem would reject; the row records no checker to tell the two
    kinds of problem apart, and a wrong *value* never passes. Pass ``checker="tokens"`` for
    ``wcmp``'s byte-exact tokens. 5 s: ``prime_code``'s per-test alarm, which the card's
    goldilocks annotation used ("prime_code-parity checker").
(b) Codeforces' default checkers compare whitespace-separated tokens (testlib ``wcmp``;
    realdata/SOURCES.md section 6 shows two correct programs that a line-strict grader rejects);
    its real-valued problems are judged within an absolute or relative error (testlib ``rcmp6``
    and the ``doubleCompare(expected, result, 1e-6)`` checkers: ``|got - want| <= 1e-6`` or
    ``<= 1e-6 * |want|``, the statements' usual "absolute or relative error does not exceed
    10^-6"). ``tokens_float`` with 1e-6 accepts exactly that; integer and string tokens as in (a),
    including the integer-spelling caveat. A problem that grants less (1e-9) or more (1e-4) needs
    ``abs_tol``/``rel_tol``, in ``reward_kwargs`` or in the row's ``extra_info``.
(c) TACO/APPS ``testing_util`` and rllm compare through a chain of fallbacks (strip equality,
    ``np.isclose``/``np.allclose`` with rtol 1e-5, sets of lines and tokens, floats rounded to
    3 decimals) and accept a mismatched non-numeric token (reference finding A: ``NO`` for
    ``YES``); ``prime_code`` compares stripped lines then ``np.allclose``. arbiter compares tokens
    in order with multiplicity and numbers within 1e-6 (absolute or relative): **stricter**
    than every one of those peers, and tolerant enough for the 1e-6 answers these problems ask
    for. An expected integer token takes only that exact value (``6.0`` passes for ``6``,
    ``6.0000001`` does not: :mod:`arbiter.checkers.numbers`). TACO/APPS time limits are 4 s
    (rllm: 12 s); prime_code's alarm is 5 s.
    Call-based cases: TACO/APPS ``testing_util`` (and rllm's TACO path, which PrimeIntellect rows
    take) compare the returned value with Python ``==`` (``ret == output`` after a tuple-to-list
    pass, ``reference/codegen_harnesses.md`` section 1), and ``prime_code`` matches by ``==`` too
    (``reference/verl_reward.md`` section 3); so ``return True`` passes for an expected ``1`` and
    ``return 0`` for ``False`` there. These routes set ``CheckerSpec.strict_bool=False`` to
    accept exactly that (``True``/``False`` as ``1``/``0``; nothing else, e.g. ``"1"`` or ``2``).
(d) LiveCodeBench strips lines, requires equal line counts, and compares each line exactly or
    token-wise by exact ``Decimal`` equality (so ``1.0`` equals ``1``; no epsilon, a known source
    of false negatives: LCB issue 129, AtCoder abc315_f, whose statement allows 1e-5, judged
    ``5.8284271`` wrong; NeMo-Gym PR 2956, ``0.333333`` for ``0.333333333333``). arbiter follows
    the problems' own judges instead: tokens with numbers within 1e-6 absolute or relative
    (:data:`LCB_TOL`), what AtCoder's real-valued statements grant ("absolute or relative error
    at most 10^-6"; some grant 1e-5, none of the card's less) and LeetCode's 1e-5 covers; a row
    whose statement says otherwise carries ``extra_info.abs_tol``/``rel_tol``. An expected
    integer token still takes only its value. **Looser** about line breaks, which AtCoder's
    judge ignores too. 6 s: LCB's default per-test timeout. Call-based (LeetCode) cases compare
    JSON values (no untrusted ``__eq__``), floats within the same 1e-6; a ``bool`` equals only a ``bool``
    (``strict_bool``): LCB's call-based problems are LeetCode's, whose judge tells ``true`` from
    ``1`` (LCB's own harness compares with ``==`` and would accept ``True`` for ``1``: **stricter**
    than LCB there, never stricter than the problem's own judge).
(e) LeetCodeDataset's ``check`` compares with ``==``; LeetCode's own judge accepts floats within
    1e-5, so values within 1e-6 are never an answer LeetCode rejects. LeetCode's judge serialises
    ``true`` and ``1`` differently and rejects one for the other, so a ``bool`` equals only a
    ``bool`` (``strict_bool``, stricter than ``check``'s ``==``). Rows bring their own
    prelude (``extra_info.prelude``: the row's ``prompt`` import block with ``ListNode``/
    ``TreeNode``), which the converter stores.
(f) An unknown code source gets the strictest sensible defaults: exact tokens, 5 s, ``bool``
    only ``bool``.
(g) The card routes by "every value contains code"; a non-code source (math, QA) must not be
    scored by running its answer as a program, so it is refused loudly, as verl's router does.
"""

from __future__ import annotations

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
    - ``why``: the reference behaviour this default follows (module docstring, letter).
    """

    family: str
    checker: CheckerSpec
    limits: Limits
    prelude: str = PYTHON_PRELUDE
    why: str = ""

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


#: Codeforces' usual real-number tolerance (testlib ``rcmp6`` / ``doubleCompare`` with 1e-6), docstring (a)/(b).
CODEFORCES_TOL = 1e-6

_CODE_CONTESTS = Route("code_contests", CheckerSpec("tokens_float", abs_tol=CODEFORCES_TOL, rel_tol=CODEFORCES_TOL),
                       _limits(5), why="(a) CodeContests-O validator -> problem checker: testlib wcmp / rcmp6")
_CODEFORCES = Route("codeforces", CheckerSpec("tokens_float", abs_tol=CODEFORCES_TOL, rel_tol=CODEFORCES_TOL),
                    _limits(5), why="(b) Codeforces checkers: wcmp tokens, rcmp6 / doubleCompare 1e-6")
_TACO = Route("taco", CheckerSpec("tokens_float", abs_tol=1e-6, rel_tol=1e-6, strict_bool=False), _limits(5),
              why="(c) TACO/APPS testing_util, rllm, prime_code (all looser)")
_PRIME = Route("primeintellect", CheckerSpec("tokens_float", abs_tol=1e-6, rel_tol=1e-6, strict_bool=False),
               _limits(5), why="(c) rllm primeintellect -> TACO path, prime_code")
#: The real-number tolerance AtCoder and LeetCode statements grant (1e-6 absolute or relative, some 1e-5), docstring (d).
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


def route(data_source: Any) -> Route:
    """The :class:`Route` for a row's ``data_source`` (case-insensitive, surrounding spaces ignored).

    Known names are in :data:`ROUTES`; any other name containing ``code`` gets the strict default
    route (the card: "every value contains code, so the verl reward router dispatches it to the
    sandbox execution checker"). Raises ``ValueError`` naming the data_source for anything else
    (``gsm8k``, ``math``, ``None``): arbiter never scores a non-code row by running it.
    """
    if isinstance(data_source, bytes):  # some Arrow paths hand strings over as bytes
        data_source = data_source.decode("utf-8", "replace")
    # numpy.str_ (verl's non_tensor_batch) is a str subclass
    name = str(data_source).strip().lower() if isinstance(data_source, str) else None
    if name in ROUTES:
        return ROUTES[name]
    if name and "code" in name:
        return _CODE
    known = ", ".join(sorted(ROUTES))
    raise ValueError(
        f"data_source {data_source!r} is not a code-execution source: arbiter's reward only judges programs "
        f"(known: {known}, or any name containing 'code'); route other sources to another scorer"
    )


__all__ = ["CODEFORCES_TOL", "DEFAULT_MEMORY_MIB", "LCB_TOL", "PYTHON_PRELUDE", "ROUTES", "Route", "route", "scrub_prelude"]
