"""``report.md``: the report's tables as Markdown, each section with its PNGs embedded. See ``docs/report.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def num(x: Any, digits: int = 3) -> str:
    """``1,234`` for integers, ``0.565`` or ``100.5`` for floats (no trailing zeros), empty for ``None``."""
    if x is None:
        return ""
    if isinstance(x, float) and not x.is_integer():
        text = f"{x:,.{digits}f}".rstrip("0")
        return text.rstrip(".") or "0"
    return f"{int(x):,}"


def pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.1f}%"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows] + [""]


def _label(r: dict[str, Any]) -> str:
    return f"data_source {r['slice']}" if r["level"] == "data_source" else r["slice"]


def _kept(rows: int, cand: int | None, share: float | None) -> str:
    return f"{rows:,} / {cand:,} ({pct(share)})" if cand else ""


def _dataset(d: dict[str, Any]) -> list[str]:
    comp, p = d["composition"], d["prompts"]
    rows = []
    for s in comp["sources"]:
        rows.append([s["source"], num(s["rows"]), pct(s["share"]), _kept(s["rows"], s["candidates"], s["kept_share"])])
        rows += [[f"• {x['data_source']}", num(x["rows"]), pct(x["share"]),
                  _kept(x["rows"], x["candidates"], x["kept_share"])] for x in s["data_sources"]]
    t = comp["total"]
    rows.append(["total", num(t["rows"]), pct(1.0 if t["rows"] else None), _kept(t["rows"], t["candidates"],
                                                                                  t["kept_share"])])
    out = [f"{num(d['rows'])} rows, {num(d['annotated_rows'])} with the goldilocks annotation; "
           f"{num(d['unconvertible_suites'])} whose ground truth does not convert.", ""]
    if d.get("stored_rates_differ"):
        out += [f"**{num(d['stored_rates_differ'])} row(s) store a pass rate their scores do not give** (the rates "
                f"below are the scores'; `arbiter curate audit` lists them): "
                f"{', '.join(d['stored_rates_differ_keys'][:5])}.", ""]
    out += ["### Composition", ""]
    out += table(["source", "rows", "share", "kept / candidate"], rows)
    out += ["### Difficulty (mean / median pass rate)", ""]
    out += table(["slice", "rows", "weak mean", "weak median", "strong mean", "strong median"],
                 [[_label(r), num(r["rows"]), num(r["weak_mean"]), num(r["weak_median"]), num(r["strong_mean"]),
                   num(r["strong_median"])] for r in d["difficulty"]])
    out += ["### Test suites", ""]
    out += table(["slice", "total cases", "mean / problem", "median", "range"],
                 [[_label(r), num(r["total"]), num(r["mean"], 1), num(r["median"]),
                   f"{num(r['min'])} – {num(r['max'])}"] for r in d["suites"]])
    out += [f"### Prompt length ({p['unit']})", "", p["how"] + ".", ""]
    out += table(["metric", "value"], [["total", num(p["total"])], ["mean / median", f"{num(p['mean'], 0)} / "
                                       f"{num(p['median'], 0)}"],
                                      ["p95 / p99 / max", f"{num(p['p95'], 0)} / {num(p['p99'], 0)} / {num(p['max'])}"],
                                      [f"rows above {p['cap']:,}", num(p["over_cap"])]]
                 + [[f"median, {s}", num(m, 0)] for s, m in p["median_by_source"].items()])
    return out


def _score(d: dict[str, Any]) -> list[str]:
    out = [f"{num(d['problems'])} problems; left out: {num(d.get('invalid_problems', 0))} INVALID_TASK problem(s) "
           f"({num(d.get('invalid_responses', 0))} responses) and {num(d.get('unusable_rows', 0))} dataset row(s) "
           f"that could not be scored (errors.jsonl).", ""]
    out += table(["data_source", "problems", "responses", "mean pass rate", "median", "solved at least once"],
                 [[r["data_source"], num(r["problems"]), num(r["responses"]), num(r["mean_pass_rate"]),
                   num(r["median_pass_rate"]), num(r["solved_at_least_once"])] for r in d["by_data_source"]])
    curve, over = d["overall_pass_at_k"], d.get("problems_at_k") or {}
    out += table(["k", *curve], [["pass@k", *(num(v) for v in curve.values())],
                                 ["problems with >= k responses", *(num(over.get(k)) for k in curve)]])
    out += table(["verdict", "responses"], [[v, num(n)] for v, n in d["verdicts"].items()])
    return out


def _pie(d: dict[str, Any]) -> list[str]:
    out = [f"{num(d['programs'])} programs ({d['method']}, unit {d['unit']}); {num(d['excluded'])} excluded.", ""]
    return out + table(["k", "%Opt", "mean speedup", "%Correct"],
                       [[m["k"], num(m["pct_opt"], 2), num(m["mean_speedup"]), num(m["pct_correct"], 2)]
                        for m in d["metrics"]])


def _pie_reward(d: dict[str, Any]) -> list[str]:
    s = d["summary"]
    out = [f"{num(s['n'])} candidates, {num(s['n_scored'])} scored, {num(s['n_correct'])} correct "
           f"({num(s['pct_correct'], 2)}%); %Opt {num(s['pct_opt'], 2)}; mean reward {num(s['mean_reward'])} "
           f"(transform {d['transforms']}); speedups in {s['speedup_unit']}: mean {num(s['mean_speedup'])}, "
           f"median {num(s['median_speedup'])}, geomean {num(s['geomean_speedup'])}.", ""]
    return out + table(["outcome", "candidates"], [[o, num(n)] for o, n in d["by_outcome"].items()])


def _oracle(d: dict[str, Any]) -> list[str]:
    c = d["counts"]
    out = [f"{num(c['rows'])} return rows: {num(c['accepted'])} accepted, {num(c['rejected'])} rejected, "
           f"{num(c['errors'])} errors; {num(c['sft_rows'])} SFT rows.", ""]
    out += table(["stage", "rejections"], [[s, num(n)] for s, n in d["by_stage"].items()])
    return out + table(["reason", "rejected rows"], [[s, num(n)] for s, n in d["by_reason"].items()])


def _score_compare(d: dict[str, Any]) -> list[str]:
    names = d["folders"]
    out = [" / ".join(f"{n}: {num(d['problems'][n])} problems" for n in names) + ".", ""]
    header = ["data_source"] + [f"{n} mean pass rate" for n in names] + [f"{n} solved" for n in names]
    rows = []
    for r in d["by_data_source"]:
        cells = [r["folders"][n] for n in names]
        rows.append([r["data_source"], *(num(c["mean_pass_rate"]) if c else "" for c in cells),
                     *(num(c["solved_at_least_once"]) if c else "" for c in cells)])
    out += table(header, rows)
    ks = sorted({k for c in d["overall_pass_at_k"].values() for k in c}, key=int)
    return out + table(["pass@k", *ks], [[n, *(num(d["overall_pass_at_k"][n].get(k)) for k in ks)] for n in names])


_TITLES = {"dataset": "Dataset", "score": "Score folder", "pie": "PIE eval", "pie_reward": "PIE reward",
           "oracle": "Oracle verify", "score_compare": "Score folders side by side"}
_TABLES: dict[str, Callable[[dict[str, Any]], list[str]]] = {"dataset": _dataset, "score": _score, "pie": _pie,
                                                             "pie_reward": _pie_reward, "oracle": _oracle,
                                                             "score_compare": _score_compare}


def render(title: str, sections: Sequence[dict[str, Any]]) -> str:
    """The whole ``report.md``."""
    out = [f"# {title}", ""]
    for sec in sections:
        out += [f"## {_TITLES[sec['kind']]}: {sec['name']}", ""] + ([f"`{sec['path']}`", ""] if sec["path"] else [])
        out += _TABLES[sec["kind"]](sec["data"])
        out += [f"![{name}]({file})\n" for name, file in sec["plots"].items()]
    return "\n".join(out) + "\n"


__all__ = ["num", "pct", "render", "table"]
