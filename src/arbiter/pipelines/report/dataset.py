"""The dataset report: the codegen card's tables (composition by source, kept / candidate, difficulty by
slice, test-suite sizes, prompt lengths) and the data of its figures, computed from :class:`RowFacts`.
See ``docs/report.md`` ("Dataset report").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from arbiter.pipelines.report.rows import RowFacts
from arbiter.pipelines.report.stats import (edges_histogram, log_sizes, mean, mean_pass_at_k, median, percentile,
                                            rate_histogram, size_edges, spread)
from arbiter.pipelines.report.tokens import PromptMeter


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _slices(facts: Sequence[RowFacts]) -> list[tuple[str, str, list[RowFacts]]]:
    """``(level, name, rows)``: overall, then each source, then each data_source."""
    by_source: dict[str, list[RowFacts]] = defaultdict(list)
    by_ds: dict[str, list[RowFacts]] = defaultdict(list)
    for f in facts:
        by_source[f.source].append(f)
        by_ds[f.data_source].append(f)
    return ([("overall", "overall", list(facts))] + [("source", s, r) for s, r in sorted(by_source.items())]
            + [("data_source", d, r) for d, r in sorted(by_ds.items())])


def _source_line(name: str, parts: Mapping[str, int], total: int, cand: int | None,
                 candidates_by_ds: Mapping[str, int]) -> dict[str, Any]:
    rows = sum(parts.values())
    return {"source": name, "rows": rows, "share": _share(rows, total), "candidates": cand,
            "kept_share": _share(rows, cand) if cand else None,
            "data_sources": [{"data_source": d, "rows": n, "share": _share(n, total),
                              "candidates": candidates_by_ds.get(d),
                              "kept_share": _share(n, candidates_by_ds[d]) if candidates_by_ds.get(d) else None}
                             for d, n in sorted(parts.items())]}


def composition(facts: Sequence[RowFacts], candidates: Mapping[str, int],
                candidates_by_ds: Mapping[str, int]) -> dict[str, Any]:
    """Rows and share by source with their ``data_source`` parts; kept / candidate where candidates are
    known (``candidates``: by source; ``candidates_by_ds``: by data_source, summed into their source). A
    source or data_source with candidates but no kept row keeps its line (0 rows) and its candidates count
    in the total."""
    total = len(facts)
    by_source: dict[str, Counter[str]] = defaultdict(Counter)
    for f in facts:
        by_source[f.source][f.data_source] += 1
    owners = Counter(d for parts in by_source.values() for d in parts)
    for name in candidates:  # a named source none of whose rows was kept
        by_source.setdefault(name, Counter())
    for d in candidates_by_ds:  # a data_source none of whose rows was kept: its own source, as source_of says
        if not owners[d]:
            by_source.setdefault(d, Counter())[d] += 0
            owners[d] = 1
    sources = []
    for name, parts in sorted(by_source.items()):
        cand = candidates.get(name)
        if cand is None and parts and all(d in candidates_by_ds and owners[d] == 1 for d in parts):
            cand = sum(candidates_by_ds[d] for d in parts)  # only when no data_source is shared with another source
        sources.append(_source_line(name, parts, total, cand, candidates_by_ds))
    # every candidate row counts once: the named datasets' rows plus the unnamed ones', when every source is covered
    covered = all(s["candidates"] is not None or (s["source"] not in candidates and s["data_sources"] and all(
        d["data_source"] in candidates_by_ds for d in s["data_sources"])) for s in sources)
    all_cand = sum(candidates.values()) + sum(candidates_by_ds.values()) if sources and covered else None
    return {"sources": sources, "total": {"rows": total, "candidates": all_cand,
                                          "kept_share": _share(total, all_cand) if all_cand else None}}


def difficulty(facts: Sequence[RowFacts]) -> list[dict[str, Any]]:
    """Mean and median weak / strong pass rate per slice, over rows that carry both rates."""
    out = []
    for level, name, rows in _slices(facts):
        both = [f for f in rows if f.lower_rate is not None and f.upper_rate is not None]
        weak, strong = [f.lower_rate for f in both], [f.upper_rate for f in both]
        out.append({"level": level, "slice": name, "rows": len(both), "weak_mean": mean(weak),
                    "weak_median": median(weak), "strong_mean": mean(strong), "strong_median": median(strong)})
    return out


def suites(facts: Sequence[RowFacts]) -> list[dict[str, Any]]:
    """Test cases per slice: total, mean, median, range (rows whose ground truth converts)."""
    return [{"level": level, "slice": name, **spread([f.cases for f in rows if f.cases is not None])}
            for level, name, rows in _slices(facts)]


def prompts(facts: Sequence[RowFacts], meter: PromptMeter, cap: int) -> dict[str, Any]:
    """Prompt length: total, mean / median, p95 / p99 / max, median by source, rows above ``cap``."""
    lengths = [f.prompt for f in facts]
    by_source: dict[str, list[int]] = defaultdict(list)
    for f in facts:
        by_source[f.source].append(f.prompt)
    return {"unit": meter.unit, "how": meter.how, "total": sum(lengths), "mean": mean(lengths),
            "median": median(lengths), "p95": percentile(lengths, 95), "p99": percentile(lengths, 99),
            "max": max(lengths, default=None), "median_by_source": {s: median(v) for s, v in sorted(by_source.items())},
            "cap": cap, "over_cap": sum(1 for n in lengths if n > cap)}


def samples_k(facts: Sequence[RowFacts]) -> int:
    """k of the pass rates: the most common number of per-completion scores (8 when none are stored)."""
    counts = Counter(len(s) for f in facts for s in (f.lower, f.upper) if s)
    return counts.most_common(1)[0][0] if counts else 8


def figures(facts: Sequence[RowFacts]) -> dict[str, Any]:
    """The data behind each plot: pass-rate histograms, test-suite sizes, pass@k by data_source."""
    k = samples_k(facts)
    weak = [f.lower_rate for f in facts if f.lower_rate is not None]
    strong = [f.upper_rate for f in facts if f.upper_rate is not None]
    sizes = [f.cases for f in facts if f.cases is not None]
    edges = size_edges(sizes)
    by_ds: dict[str, dict[str, list[tuple[int, int]]]] = {"weak": defaultdict(list), "strong": defaultdict(list)}
    for f in facts:
        for model, scores in (("weak", f.lower), ("strong", f.upper)):
            if scores:
                by_ds[model][f.data_source].append((len(scores), sum(1 for s in scores if s == 1.0)))
    return {
        "pass_rates": {"k": k, "bins": [j / k for j in range(k + 1)], "weak": rate_histogram(weak, k),
                       "strong": rate_histogram(strong, k)},
        "suite_sizes": {"edges": edges, "counts": edges_histogram(sizes, edges), "log": log_sizes(sizes)},
        "pass_at_k": {m: {d: mean_pass_at_k(c) for d, c in sorted(v.items())} for m, v in by_ds.items()},
    }


def dataset_section(facts: Sequence[RowFacts], meter: PromptMeter, *, candidates: Mapping[str, int],
                    candidates_by_ds: Mapping[str, int], cap: int) -> dict[str, Any]:
    """Every table and figure of a dataset (``docs/report.md``)."""
    annotated = sum(1 for f in facts if f.lower_rate is not None and f.upper_rate is not None)
    bad = [f.key for f in facts if f.cases is None]
    differs = [f.key for f in facts if f.stored_rate_differs]
    return {"rows": len(facts), "annotated_rows": annotated, "unconvertible_suites": len(bad),
            "unconvertible_keys": bad[:20], "stored_rates_differ": len(differs),
            "stored_rates_differ_keys": differs[:20], "composition": composition(facts, candidates, candidates_by_ds),
            "difficulty": difficulty(facts), "suites": suites(facts), "prompts": prompts(facts, meter, cap),
            "figures": figures(facts)}


__all__ = ["composition", "dataset_section", "difficulty", "figures", "prompts", "samples_k", "suites"]
