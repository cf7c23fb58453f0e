"""Report sections of run folders: ``arbiter score`` (pass rates, pass@k by data_source), ``arbiter pie eval``
(speedup distribution, %Opt by k), ``arbiter pie reward`` (speedup distribution, reward by candidate) and
``arbiter oracle verify`` (rejections by stage, accepted speedups), recognised by their files. See
``docs/report.md``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from arbiter.datasets.io import read_jsonl
from arbiter.pipelines.report.stats import edges_histogram, mean, mean_pass_at_k, median, rate_histogram, ratio_edges


#: PIE's %Opt threshold, where the speedup histograms put a bin edge (no bin straddles it).
OPT_THRESHOLD = 1.10


def folder_kind(path: Path) -> str | None:
    """``"score"``, ``"pie"`` (eval), ``"pie_reward"``, ``"oracle"`` for a run folder of that job, else ``None``."""
    if not path.is_dir():
        return None
    if (path / "problems.jsonl").is_file() and (path / "verdicts.jsonl").is_file():
        return "score"
    if (path / "metrics.json").is_file():
        return "pie"
    if (path / "rewards.jsonl").is_file() and (path / "summary.json").is_file():
        return "pie_reward"
    if (path / "report.json").is_file() and (path / "verified.jsonl").is_file():
        return "oracle"
    return None


def _json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not readable JSON ({exc})") from None


def score_section(path: Path) -> dict[str, Any]:
    """From ``problems.jsonl``: problems and mean pass rate by data_source, pass@k, verdicts, the
    pass-rate histogram (in multiples of 1/k, k the most common responses per problem); what is
    left out (INVALID_TASK problems and their responses; dataset rows listed in ``errors.jsonl``)."""
    every = list(read_jsonl(path / "problems.jsonl"))
    problems = [p for p in every if not p.get("invalid")]
    invalid = [p for p in every if p.get("invalid")]
    errors = list(read_jsonl(path / "errors.jsonl")) if (path / "errors.jsonl").is_file() else []
    by_ds: dict[str, list[tuple[int, int]]] = defaultdict(list)
    verdicts: Counter[str] = Counter()
    for p in problems:
        by_ds[str(p.get("data_source"))].append((int(p["n"]), int(p["c"])))
        verdicts.update(p.get("verdicts") or {})
    k = Counter(n for counts in by_ds.values() for n, _ in counts).most_common(1)[0][0] if problems else 1
    table = [{"data_source": ds, "problems": len(c), "responses": sum(n for n, _ in c),
              "mean_pass_rate": mean([x / n for n, x in c]), "median_pass_rate": median([x / n for n, x in c]),
              "solved_at_least_once": sum(1 for _, x in c if x)} for ds, c in sorted(by_ds.items())]
    everything = [nc for c in by_ds.values() for nc in c]
    overall = mean_pass_at_k(everything)
    return {"problems": len(everything), "invalid_problems": len(invalid),
            "invalid_responses": sum(int(p.get("n") or 0) for p in invalid),
            "unusable_rows": sum(1 for e in errors if e.get("kind") == "dataset"), "by_data_source": table,
            "verdicts": dict(sorted(verdicts.items())),
            "overall_pass_at_k": overall,
            "problems_at_k": {at: sum(1 for n, _ in everything if n >= int(at)) for at in overall},
            "figures": {"pass_rates": {"k": k, "bins": [j / k for j in range(k + 1)],
                                       "rates": rate_histogram([x / n for n, x in everything if n], k)},
                        "pass_at_k": {ds: mean_pass_at_k(c) for ds, c in sorted(by_ds.items())}}}


def pie_section(path: Path) -> dict[str, Any]:
    """From ``metrics.json``: the metrics at each k, and the speedups of correct generations
    (source runtime / generation runtime) and of each program's best@n."""
    rep = _json(path / "metrics.json")
    metrics = [{key: m.get(key) for key in ("k", "pct_opt", "mean_speedup", "pct_correct")}
               for m in rep.get("metrics") or []]
    generations, best = [], []
    for p in rep.get("per_program") or []:
        src = p.get("src_runtime")
        if isinstance(src, (int, float)) and src > 0:
            generations += [src / r for r in p.get("runtimes") or [] if isinstance(r, (int, float)) and r > 0]
        at_k = p.get("speedups_at_k") or {}
        if at_k:
            best.append(at_k[max(at_k, key=lambda s: int(s))])
    edges = ratio_edges(generations, anchor=OPT_THRESHOLD)
    return {"method": rep.get("method"), "unit": rep.get("unit"), "programs": rep.get("n_programs"),
            "excluded": rep.get("n_excluded"), "metrics": metrics,
            "figures": {"speedups": {"edges": edges, "counts": edges_histogram(generations, edges),
                                     "values": sorted(generations), "opt_threshold": OPT_THRESHOLD},
                        "pct_opt": {"k": [m["k"] for m in metrics], "pct_opt": [m["pct_opt"] for m in metrics],
                                    "pct_correct": [m["pct_correct"] for m in metrics]},
                        "best_at_n": sorted(best)}}


def _candidate_label(rec: dict[str, Any]) -> str:
    who = rec.get("id") or "/".join(str(rec[k]) for k in ("problem_id", "src_id") if rec.get(k))
    return f"{who or 'line ' + str(rec.get('line'))}#{rec.get('index', 0)}"


def pie_reward_section(path: Path) -> dict[str, Any]:
    """From ``rewards.jsonl`` and ``summary.json`` of ``arbiter pie reward``: the summary's figures, the speedups
    of correct candidates measured as requested (no meter fallback) and each scored candidate's reward."""
    summary = _json(path / "summary.json")
    records = list(read_jsonl(path / "rewards.jsonl"))
    speedups = sorted(float(r["speedup"]) for r in records
                      if r.get("outcome") == "AC" and isinstance(r.get("speedup"), (int, float))
                      and r.get("method") == r.get("requested_method", r.get("method")))
    rewards = [{"candidate": _candidate_label(r), "reward": r["reward"], "outcome": r.get("outcome")}
               for r in records if isinstance(r.get("reward"), (int, float))]
    edges = ratio_edges(speedups, anchor=OPT_THRESHOLD)
    keys = ("n", "n_scored", "n_correct", "pct_correct", "pct_opt", "mean_reward", "speedup_unit", "mean_speedup",
            "median_speedup", "geomean_speedup")
    return {"summary": {k: summary.get(k) for k in keys}, "by_outcome": dict(summary.get("by_outcome") or {}),
            "transforms": summary.get("transforms"),
            "figures": {"speedups": {"edges": edges, "counts": edges_histogram(speedups, edges), "values": speedups,
                                     "opt_threshold": OPT_THRESHOLD, "unit": summary.get("speedup_unit")},
                        "rewards": rewards}}


def oracle_section(path: Path) -> dict[str, Any]:
    """From the folder's ``report.json``: counts, rejections by stage and the speedups of accepted rows."""
    rep = _json(path / "report.json")
    speedups = sorted(float(r["speedup"]) for r in rep.get("rows") or []
                      if r.get("outcome") == "accepted" and isinstance(r.get("speedup"), (int, float)))
    edges = ratio_edges(speedups)
    counts = rep.get("counts") or {}
    return {"counts": {k: counts.get(k) for k in ("rows", "accepted", "rejected", "errors", "sft_rows")},
            "by_stage": dict(rep.get("by_stage") or {}), "by_reason": dict(rep.get("by_reason") or {}),
            "figures": {"rejections": dict(rep.get("by_stage") or {}),
                        "speedups": {"edges": edges, "counts": edges_histogram(speedups, edges), "values": speedups}}}


SECTIONS = {"score": score_section, "pie": pie_section, "pie_reward": pie_reward_section, "oracle": oracle_section}

__all__ = ["OPT_THRESHOLD", "SECTIONS", "folder_kind", "oracle_section", "pie_reward_section", "pie_section",
           "score_section"]
