"""``arbiter pie plots`` through the real CLI on a real ``arbiter pie reward`` folder (real PIE rows of
``realdata/pie_purdue/val.jsonl`` with their public tests) and on an ``arbiter pie eval`` folder: the speedup
histogram's bins never straddle PIE's 1.10 %Opt threshold, the %Opt plot ticks integer k only and keeps %Opt
visible when it equals %Correct. Numbers are checked in ``report.json``, styles on the figure itself."""

from __future__ import annotations

import json

import pytest

from arbiter.datasets.io import read_jsonl
from arbiter.pipelines.report.plots import percent_by_k_figure
from arbiter.pipelines.report.stats import edges_histogram, ratio_edges
from test_report import assert_png, cli

WRONG = "#include <cstdio>\nint main() { puts(\"0\"); return 0; }\n"


@pytest.fixture(scope="module")
def real(shared, tmp_path_factory):
    rd = shared / "realdata"
    val, tar = rd / "pie_purdue" / "val.jsonl", rd / "pie_public_tests" / "public_test_cases.tar.gz"
    for p in (val, tar):
        if not p.is_file():
            pytest.skip(f"{p} not found")
    root = tmp_path_factory.mktemp("pie_plots")
    rows = [json.loads(line) for line in val.read_text(encoding="utf-8").splitlines() if line.strip()]
    picked = [r for r in rows if r["problem_id"] == "p02915"][:2]
    (root / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in picked))
    (root / "cands.jsonl").write_text("".join(
        json.dumps({"src_id": r["src_id"], "tgt_id": r["tgt_id"], "candidates": [r["tgt_code"], WRONG]}) + "\n"
        for r in picked))
    return {"root": root, "tests": tar, "rows": picked}


def test_pie_plots_on_a_reward_folder_draws_speedups_and_reward_by_candidate(real):
    folder = real["root"] / "reward"
    r = cli("pie", "reward", "--rows", str(real["root"] / "rows.jsonl"), "--tests", str(real["tests"]),
            "--candidates", str(real["root"] / "cands.jsonl"), "--out", str(folder), "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    p = cli("pie", "plots", str(folder))  # default --out: FOLDER/plots
    assert p.returncode == 0, p.stdout + p.stderr
    out = folder / "plots"
    sec = json.loads((out / "report.json").read_text())["sections"][0]
    assert sec["kind"] == "pie_reward" and set(sec["plots"]) == {"speedups", "rewards"}
    recs = list(read_jsonl(folder / "rewards.jsonl"))
    assert [x["outcome"] for x in recs] == ["AC", "WA", "AC", "WA"]
    fig = sec["data"]["figures"]
    assert fig["rewards"] == [{"candidate": f"{x['problem_id']}/{x['src_id']}#{x['index']}", "reward": x["reward"],
                               "outcome": x["outcome"]} for x in recs]
    speedups = sorted(x["speedup"] for x in recs if x["outcome"] == "AC")
    assert fig["speedups"]["values"] == pytest.approx(speedups)
    edges = fig["speedups"]["edges"]
    assert 1.1 in edges and fig["speedups"]["counts"] == edges_histogram(speedups, edges)
    summary = json.loads((folder / "summary.json").read_text())
    assert sec["data"]["by_outcome"] == summary["by_outcome"] == {"AC": 2, "WA": 2}
    assert "## PIE reward: reward" in (out / "report.md").read_text()
    for name in sec["plots"].values():
        assert_png(out / name)


def test_pie_eval_speedup_bins_align_to_the_opt_threshold_and_pct_opt_ticks_integer_k(tmp_path):
    # %Opt equals %Correct at every k: every correct generation is at least 1.10x (a: 1.1 exactly, at a bin edge)
    progs = [{"id": "a", "src_runtime": 1.1, "runtimes": [None, 1.0, 0.5, None, None]},
             {"id": "b", "src_runtime": 5.0, "runtimes": [2.0, None, None, 1.0, 4.5]},
             {"id": "c", "src_runtime": 3.0, "runtimes": [None, None, None, None, None]}]
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps(p) + "\n" for p in progs))
    folder = tmp_path / "eval"
    e = cli("pie", "eval", "--generations", str(gens), "--out", str(folder), "--no-progress")
    assert e.returncode == 0, e.stdout + e.stderr
    r = cli("pie", "plots", str(folder), "--out", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stdout + r.stderr
    fig = json.loads((tmp_path / "rep" / "report.json").read_text())["sections"][0]["data"]["figures"]
    values = fig["speedups"]["values"]
    edges = fig["speedups"]["edges"]
    assert 1.1 in edges  # no bin straddles the threshold: below and at-or-above 1.10 are counted apart
    at = edges.index(1.1)
    assert sum(fig["speedups"]["counts"][at:]) == sum(v >= 1.1 for v in values)
    assert sum(fig["speedups"]["counts"][:at]) == sum(v < 1.1 for v in values)
    opt = fig["pct_opt"]
    assert opt["k"] == [1, 2, 3, 4, 5] and opt["pct_opt"] == opt["pct_correct"]
    drawn = percent_by_k_figure(opt["k"], {"%Opt": opt["pct_opt"], "%Correct": opt["pct_correct"]}, "t")
    ax = drawn.axes[0]
    assert [float(t) for t in ax.get_xticks()] == [1.0, 2.0, 3.0, 4.0, 5.0]
    pct_opt, pct_correct = ax.get_lines()
    assert list(pct_opt.get_ydata()) == list(pct_correct.get_ydata())
    # equal lines in different styles, the later one drawn over the earlier: both stay visible
    assert pct_opt.get_linestyle() != pct_correct.get_linestyle()
    assert pct_opt.get_marker() != pct_correct.get_marker() and pct_opt.get_markersize() > pct_correct.get_markersize()
    assert pct_correct.get_zorder() > pct_opt.get_zorder()


def test_ratio_edges_pass_through_the_anchor_and_cover_every_value():
    for values in ([0.5, 1.2, 3.0, 40.0], [1.1], [], [0.01, 0.02], [200.0, 900.0]):
        edges = ratio_edges(values, anchor=1.1)
        assert 1.1 in edges and edges == sorted(edges)
        assert all(edges[0] <= v <= edges[-1] for v in values)
        assert 12 <= len(edges) - 1 <= 14
