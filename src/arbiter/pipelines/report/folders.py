"""Report sections of run folders: ``arbiter score`` (pass rates, pass@k by data_source), ``arbiter pie eval``
(speedup distribution, %Opt by k) and ``arbiter oracle verify`` (rejections by stage, accepted speedups),
recognised by their files. See ``docs/report.md``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from arbiter.datasets.io import read_jsonl
from arbiter.pipelines.report.stats import edges_histogram, mean, mean_pass_at_k, median, rate_histogram, ratio_edges


def folder_kind(path: Path) -> str | None:
    """``"score"``, ``"pie"``, ``"oracle"`` for a run folder of that job, else ``None``."""
    if not path.is_dir():
        return None
    if (path / "problems.jsonl").is_file() and (path / "verdicts.jsonl").is_file():
        return "score"
    if (path / "metrics.json").is_file():
        return "pie"
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
    pass-rate histogram (in multiples of 1/k, k the most common responses per problem)."""
    problems = [p for p in read_jsonl(path / "problems.jsonl") if not p.get("invalid")]
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
    return {"problems": len(everything), "by_data_source": table, "verdicts": dict(sorted(verdicts.items())),
            "overall_pass_at_k": mean_pass_at_k(everything),
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
    edges = ratio_edges(generations)
    return {"method": rep.get("method"), "unit": rep.get("unit"), "programs": rep.get("n_programs"),
            "excluded": rep.get("n_excluded"), "metrics": metrics,
            "figures": {"speedups": {"edges": edges, "counts": edges_histogram(generations, edges),
                                     "values": sorted(generations), "opt_threshold": 1.10},
                        "pct_opt": {"k": [m["k"] for m in metrics], "pct_opt": [m["pct_opt"] for m in metrics],
                                    "pct_correct": [m["pct_correct"] for m in metrics]},
                        "best_at_n": sorted(best)}}


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


SECTIONS = {"score": score_section, "pie": pie_section, "oracle": oracle_section}

__all__ = ["SECTIONS", "folder_kind", "oracle_section", "pie_section", "score_section"]
