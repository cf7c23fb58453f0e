"""Score folders side by side (a weak and a strong model's ``arbiter score`` runs over one dataset): per
``data_source`` the mean pass rate of each folder, the overall pass@k curves and one pass-rate histogram with
a bar per folder. See ``docs/report.md`` ("Score folders side by side").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def score_comparison(sections: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The side-by-side data of two or more score sections (``{"kind": "score", "name", "data"}``), else
    ``None``. The histogram is compared only when every folder has the same k (responses per problem)."""
    scores = [s for s in sections if s["kind"] == "score"]
    if len(scores) < 2:
        return None
    names = [s["name"] for s in scores]
    data_sources = sorted({r["data_source"] for s in scores for r in s["data"]["by_data_source"]})
    table = []
    for ds in data_sources:
        cells = {}
        for s in scores:
            row = next((r for r in s["data"]["by_data_source"] if r["data_source"] == ds), None)
            cells[s["name"]] = (None if row is None else
                                {k: row[k] for k in ("problems", "mean_pass_rate", "solved_at_least_once")})
        table.append({"data_source": ds, "folders": cells})
    ks = {s["data"]["figures"]["pass_rates"]["k"] for s in scores}
    rates = None
    if len(ks) == 1:
        k = ks.pop()
        rates = {"k": k, "bins": [j / k for j in range(k + 1)],
                 "series": {s["name"]: s["data"]["figures"]["pass_rates"]["rates"] for s in scores}}
    return {"folders": names, "by_data_source": table,
            "problems": {s["name"]: s["data"]["problems"] for s in scores},
            "overall_pass_at_k": {s["name"]: s["data"]["overall_pass_at_k"] for s in scores},
            "figures": {"pass_rates": rates,
                        "pass_at_k": {"overall": {s["name"]: s["data"]["overall_pass_at_k"] for s in scores}}}}


__all__ = ["score_comparison"]
