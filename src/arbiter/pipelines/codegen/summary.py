"""Per-problem and per-source figures of an ``arbiter score`` folder: ``problems.jsonl`` (pass
rate, pass@k, verdict counts, ``vacuous``) and the summary (overall and by ``data_source``),
rebuilt from ``verdicts.jsonl``. See ``docs/codegen.md`` ("Batch scoring").
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.io import atomic_open, read_jsonl
from arbiter.datasets.verl_rows import VACUOUS_SUITE
from arbiter.judge.verdict import Outcome

INVALID_TASK = Outcome.INVALID_TASK.value


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator of Chen et al. 2021 (Codex paper, eq. 1):
    ``1 - C(n - c, k) / C(n, k)``, the probability that at least one of k responses drawn
    without replacement from the n sampled is correct, given c of them are.

    Computed in the paper's numerically stable product form
    ``1 - prod_{i = n-c+1}^{n} (1 - k / i)`` (no huge binomials). Raises ``ValueError`` unless
    ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n) or not (1 <= k <= n):
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


@dataclass
class _Problem:
    data_source: str
    index: Any
    n: int = 0
    c: int = 0
    invalid: bool = False
    warning: str = ""
    verdicts: Counter = field(default_factory=Counter)

    @property
    def vacuous(self) -> bool:
        return self.warning.startswith(VACUOUS_SUITE)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _group_stats(problems: list[_Problem]) -> dict[str, Any]:
    valid = [p for p in problems if not p.invalid]
    verdicts: Counter = Counter()
    for p in problems:
        verdicts.update(p.verdicts)
    max_n = max((p.n for p in valid), default=0)
    pass_k: dict[str, float] = {}
    problems_k: dict[str, int] = {}
    for k in range(1, max_n + 1):
        vals = [pass_at_k(p.n, p.c, k) for p in valid if p.n >= k]
        if vals:
            pass_k[str(k)] = sum(vals) / len(vals)
            problems_k[str(k)] = len(vals)
    return {
        "problems": len(valid),
        "invalid_problems": len(problems) - len(valid),
        "invalid_responses": sum(p.n for p in problems if p.invalid),
        "vacuous_problems": sum(1 for p in valid if p.vacuous),
        "responses": sum(p.n for p in valid),
        "correct": sum(p.c for p in valid),
        "mean_pass_rate": _mean([p.c / p.n for p in valid if p.n]),
        "solved_at_least_once": sum(1 for p in valid if p.c > 0),
        "pass_at_k": pass_k,
        "problems_at_k": problems_k,
        "verdicts": dict(sorted(verdicts.items())),
    }


#: How many row keys of vacuous suites ``summary.json`` lists (all are in ``problems.jsonl``).
VACUOUS_KEYS_SHOWN = 20


def summarize(out_dir: str | os.PathLike, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """Rebuild ``problems.jsonl`` from ``verdicts.jsonl`` (streamed) and return the summary
    (overall and by ``data_source``). ``keys``: only these row keys (default: all).

    A response counts as correct when its ``score`` is 1.0 (in parity mode a partial score is not
    a pass; a ``SKIPPED`` verdict with score 1.0 is, as in prime_code). INVALID_TASK rows are
    counted apart (``docs/codegen.md``).
    """
    out = Path(out_dir)
    wanted = set(keys) if keys is not None else None
    problems: dict[str, _Problem] = {}
    for rec in read_jsonl(out / "verdicts.jsonl"):
        key = rec["row_key"]
        if wanted is not None and key not in wanted:
            continue
        p = problems.get(key)
        if p is None:
            p = problems[key] = _Problem(rec.get("data_source", "?"), rec.get("index"))
        p.n += 1
        p.c += 1 if rec.get("score") == 1.0 else 0
        p.verdicts[rec.get("verdict", "?")] += 1
        if rec.get("verdict") == INVALID_TASK:
            p.invalid = True
        if not p.warning and isinstance(rec.get("warning"), str):
            p.warning = rec["warning"]
    with atomic_open(out / "problems.jsonl") as f:
        for key, p in problems.items():
            f.write(json.dumps({
                "row_key": key, "data_source": p.data_source, "index": p.index, "n": p.n, "c": p.c,
                "invalid": p.invalid, "vacuous": p.vacuous, "warning": p.warning,
                "pass_rate": None if p.invalid else p.c / p.n,
                "pass_at_k": {} if p.invalid else {str(k): pass_at_k(p.n, p.c, k) for k in range(1, p.n + 1)},
                "verdicts": dict(p.verdicts),
            }, ensure_ascii=False, default=str) + "\n")
    by_source: dict[str, list[_Problem]] = defaultdict(list)
    for p in problems.values():
        by_source[str(p.data_source)].append(p)
    return {
        "overall": _group_stats(list(problems.values())),
        "by_data_source": {ds: _group_stats(ps) for ds, ps in sorted(by_source.items())},
        "vacuous_row_keys": [key for key, p in problems.items() if p.vacuous and not p.invalid][:VACUOUS_KEYS_SHOWN],
    }


__all__ = ["VACUOUS_KEYS_SHOWN", "pass_at_k", "summarize"]
