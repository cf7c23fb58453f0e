"""PNG figures drawn from the report's figure data (the numbers in ``report.json`` are exactly what is
drawn). matplotlib's object API on the Agg canvas: no display, no pyplot state. See ``docs/report.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _figure(width: float = 7.0, height: float = 4.0):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path.name


def _integer_counts(ax: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def _bars(ax: Any, edges: Sequence[float], counts: Sequence[int], log: bool, label: str = "") -> None:
    widths = [b - a for a, b in zip(edges, edges[1:])]
    ax.bar(edges[:-1], counts, width=widths, align="edge", edgecolor="black", linewidth=0.5, label=label or None)
    if log:
        from matplotlib.ticker import FixedLocator, NullLocator

        ax.set_xscale("log")
        nice = [m * 10 ** e for e in range(-3, 6) for m in (1, 1.5, 2, 3, 5, 7)]
        inside = [t for t in nice if edges[0] <= t <= edges[-1]]
        ticks = inside[:: max(1, len(inside) // 8)]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])


def pass_rate_histogram(path: Path, data: Mapping[str, Any], series: Mapping[str, Sequence[int]], title: str) -> str:
    """Grouped bars of pass-rate counts at 0, 1/k, ..., 1, one colour per series (weak, strong, ...)."""
    fig = _figure()
    ax = fig.add_subplot()
    k, names = data["k"], list(series)
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        ax.bar([j + (i - (len(names) - 1) / 2) * width for j in range(k + 1)], series[name], width=width, label=name)
    ax.set_xticks(range(k + 1), [f"{j}/{k}" for j in range(k + 1)])
    _integer_counts(ax)
    ax.set_xlabel("pass rate (completions that pass every case)")
    ax.set_ylabel("rows")
    ax.set_title(title)
    ax.legend()
    return _save(fig, path)


def pass_at_k_lines(path: Path, panels: Mapping[str, Mapping[str, Mapping[str, float]]], title: str) -> str:
    """One panel per model (weak, strong, or one score folder), one line of mean pass@k per data_source."""
    fig = _figure(4.0 * max(1, len(panels)) + 1, 4.0)
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False)[0]
    for ax, (model, by_ds) in zip(axes, panels.items()):
        for ds, curve in by_ds.items():
            ks = sorted(curve, key=int)
            ax.plot([int(k) for k in ks], [curve[k] for k in ks], marker="o", label=ds)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("k")
        ax.set_ylabel("mean pass@k")
        ax.set_title(f"{title}: {model}")
        if by_ds:
            ax.legend(fontsize="small")
    return _save(fig, path)


def histogram(path: Path, edges: Sequence[float], counts: Sequence[int], *, log: bool, xlabel: str, ylabel: str,
              title: str, marker: float | None = None) -> str:
    """Bars over ``edges`` (log x when ``log``); ``marker``: a dashed vertical line (e.g. the %Opt threshold)."""
    fig = _figure()
    ax = fig.add_subplot()
    _bars(ax, edges, counts, log)
    _integer_counts(ax)
    if marker is not None:
        ax.axvline(marker, color="red", linestyle="--", label=f"{marker:g}")
        ax.legend()
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return _save(fig, path)


def category_bars(path: Path, counts: Mapping[str, int], *, xlabel: str, ylabel: str, title: str) -> str:
    """One bar per category, in the order given."""
    fig = _figure()
    ax = fig.add_subplot()
    names = list(counts)
    ax.bar(range(len(names)), [counts[n] for n in names])
    _integer_counts(ax)
    ax.set_xticks(range(len(names)), names)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return _save(fig, path)


#: Line styles of :func:`percent_by_k`, in order: the later lines are drawn dashed, with smaller markers, over the
#: earlier ones, so two lines with equal values both stay visible.
_LINE_STYLES = ({"linestyle": "-", "marker": "o", "markersize": 9, "linewidth": 2.5},
                {"linestyle": "--", "marker": "s", "markersize": 5, "linewidth": 1.5})


def percent_by_k(path: Path, ks: Sequence[int], lines: Mapping[str, Sequence[float | None]], title: str) -> str:
    """Percentages against k (PIE's best@k metrics): :func:`percent_by_k_figure` saved to ``path``."""
    return _save(percent_by_k_figure(ks, lines, title), path)


def percent_by_k_figure(ks: Sequence[int], lines: Mapping[str, Sequence[float | None]], title: str) -> Any:
    """The figure of :func:`percent_by_k`: one tick per integer k (never 1.25, 1.5, ...); each line in its own
    style, later ones dashed over earlier ones (:data:`_LINE_STYLES`), so equal lines stay visible."""
    from matplotlib.ticker import MaxNLocator

    fig = _figure()
    ax = fig.add_subplot()
    for i, (name, values) in enumerate(lines.items()):
        style = _LINE_STYLES[min(i, len(_LINE_STYLES) - 1)]
        ax.plot(ks, [v if v is not None else float("nan") for v in values], label=name, zorder=2 + i, **style)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if ks and len(ks) <= 20:
        ax.set_xticks(list(ks), [str(k) for k in ks])
    ax.set_ylim(0, 102)
    ax.set_xlabel("k (best of the first k generations)")
    ax.set_ylabel("% of programs")
    ax.set_title(title)
    ax.legend()
    return fig


def reward_bars(path: Path, rewards: Sequence[Mapping[str, Any]], *, title: str) -> str:
    """One bar per candidate (``{"candidate", "reward", "outcome"}``, in the order given), correct (AC) ones in one
    colour, failed ones in another; candidates named under the bars when they are few."""
    fig = _figure(max(7.0, min(18.0, 0.25 * len(rewards) + 3)), 4.5)
    ax = fig.add_subplot()
    xs = list(range(len(rewards)))
    colours = ["tab:green" if r.get("outcome") == "AC" else "tab:red" for r in rewards]
    ax.bar(xs, [r["reward"] for r in rewards], color=colours)
    ax.axhline(0, color="black", linewidth=0.5)
    if len(rewards) <= 40:
        ax.set_xticks(xs, [str(r["candidate"]) for r in rewards], rotation=60, ha="right", fontsize="small")
    else:
        ax.set_xticks([])
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color="tab:green", label="correct (AC)"), Patch(color="tab:red", label="failed")])
    ax.set_xlabel("candidate")
    ax.set_ylabel("reward")
    ax.set_title(title)
    return _save(fig, path)


__all__ = ["category_bars", "histogram", "pass_at_k_lines", "pass_rate_histogram", "percent_by_k",
           "percent_by_k_figure", "reward_bars"]
