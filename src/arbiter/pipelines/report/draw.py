"""Which PNGs each report section gets, drawn from the section's figure data into the report folder.
See ``docs/report.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from arbiter.pipelines.report import plots


def _dataset(sec: dict[str, Any], stem: Path) -> dict[str, str]:
    fig = sec["data"]["figures"]
    rates, sizes = fig["pass_rates"], fig["suite_sizes"]
    out = {}
    if sec["data"]["annotated_rows"]:
        out["pass_rates"] = plots.pass_rate_histogram(stem.with_name(stem.name + "_pass_rates.png"), rates,
                                                      {"weak": rates["weak"], "strong": rates["strong"]},
                                                      "weak vs strong pass rate")
        out["pass_at_k"] = plots.pass_at_k_lines(stem.with_name(stem.name + "_pass_at_k.png"), fig["pass_at_k"],
                                                 "pass@k by data_source")
    out["suite_sizes"] = plots.histogram(stem.with_name(stem.name + "_suite_sizes.png"), sizes["edges"],
                                         sizes["counts"], log=sizes["log"], xlabel="test cases per problem",
                                         ylabel="rows", title="test-suite sizes")
    return out


def _score(sec: dict[str, Any], stem: Path) -> dict[str, str]:
    fig = sec["data"]["figures"]
    return {"pass_rates": plots.pass_rate_histogram(stem.with_name(stem.name + "_pass_rates.png"), fig["pass_rates"],
                                                    {sec["name"]: fig["pass_rates"]["rates"]},
                                                    f"pass rate: {sec['name']}"),
            "pass_at_k": plots.pass_at_k_lines(stem.with_name(stem.name + "_pass_at_k.png"),
                                               {sec["name"]: fig["pass_at_k"]}, "pass@k by data_source")}


def _pie(sec: dict[str, Any], stem: Path) -> dict[str, str]:
    fig = sec["data"]["figures"]
    sp, opt = fig["speedups"], fig["pct_opt"]
    return {"speedups": plots.histogram(stem.with_name(stem.name + "_speedups.png"), sp["edges"], sp["counts"],
                                        log=True, xlabel="speedup of a correct generation (source / generation)",
                                        ylabel="generations", title="PIE speedup distribution",
                                        marker=sp["opt_threshold"]),
            "pct_opt": plots.percent_by_k(stem.with_name(stem.name + "_pct_opt.png"), opt["k"],
                                          {"%Opt": opt["pct_opt"], "%Correct": opt["pct_correct"]},
                                          "PIE best@k")}


def _pie_reward(sec: dict[str, Any], stem: Path) -> dict[str, str]:
    fig = sec["data"]["figures"]
    sp = fig["speedups"]
    return {"speedups": plots.histogram(stem.with_name(stem.name + "_speedups.png"), sp["edges"], sp["counts"],
                                        log=True, xlabel=f"speedup of a correct candidate ({sp['unit']})",
                                        ylabel="candidates", title="PIE reward: speedup distribution",
                                        marker=sp["opt_threshold"]),
            "rewards": plots.reward_bars(stem.with_name(stem.name + "_rewards.png"), fig["rewards"],
                                         title=f"reward by candidate ({sec['data'].get('transforms')})")}


def _oracle(sec: dict[str, Any], stem: Path) -> dict[str, str]:
    fig = sec["data"]["figures"]
    sp = fig["speedups"]
    return {"rejections": plots.category_bars(stem.with_name(stem.name + "_rejections.png"), fig["rejections"],
                                              xlabel="stage", ylabel="rejected rows", title="rejections by stage"),
            "speedups": plots.histogram(stem.with_name(stem.name + "_speedups.png"), sp["edges"], sp["counts"],
                                        log=True, xlabel="speedup over the source", ylabel="accepted rows",
                                        title="accepted speedups", marker=1.0)}


def _score_compare(sec: dict[str, Any], stem: Path) -> dict[str, str]:
    fig = sec["data"]["figures"]
    out = {}
    if fig["pass_rates"] is not None:
        out["pass_rates"] = plots.pass_rate_histogram(stem.with_name(stem.name + "_pass_rates.png"), fig["pass_rates"],
                                                      fig["pass_rates"]["series"], "pass rate by score folder")
    out["pass_at_k"] = plots.pass_at_k_lines(stem.with_name(stem.name + "_pass_at_k.png"), fig["pass_at_k"],
                                             "pass@k by score folder")
    return out


DRAW: dict[str, Callable[[dict[str, Any], Path], dict[str, str]]] = {
    "dataset": _dataset, "score": _score, "pie": _pie, "pie_reward": _pie_reward, "oracle": _oracle,
    "score_compare": _score_compare}

__all__ = ["DRAW"]
