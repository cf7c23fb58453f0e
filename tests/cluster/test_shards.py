"""Shards without Ray: ``arbiter score --shard i/N`` + ``arbiter merge`` give the single run's files; merging
shards that overlap or were scored with other options is refused; ``arbiter curate goldilocks`` reads
several folders per model (the shards) as the one folder of a single run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cluster.ray_rows import arbiter, make_inputs, without_timing


@pytest.fixture(scope="module")
def runs(shared: Path, tmp_path_factory):
    work = tmp_path_factory.mktemp("shards")
    dataset, completions, expected = make_inputs(shared, work, leetcode_rows=3, per_row=3)
    base = ["score", "--dataset", str(dataset), "--completions", str(completions), "--quiet"]
    arbiter(*base, "--out", str(work / "local"))
    for i in range(3):
        arbiter(*base, "--out", str(work / f"shard{i}"), "--shard", f"{i}/3")
    arbiter(*base, "--out", str(work / "other"), "--shard", "0/3", "--time-limit", "5")
    arbiter(*base, "--out", str(work / "strong"))  # the "strong model": another folder of the same scores
    return work, dataset, expected


def test_merged_shards_are_the_single_run(runs):
    work, _, expected = runs
    sizes = [len((work / f"shard{i}" / "verdicts.jsonl").read_text().splitlines()) for i in range(3)]
    assert sum(sizes) == len(expected) and max(sizes) < len(expected)
    arbiter("merge", str(work / "merged"), *(str(work / f"shard{i}") for i in range(3)))
    for name in ("verdicts.jsonl", "problems.jsonl", "summary.json"):
        assert without_timing(work / "merged" / name) == without_timing(work / "local" / name), name
    assert json.loads((work / "merged" / "config.json").read_text()) == json.loads((work / "local" / "config.json").read_text())


def test_merge_refuses_overlap_and_other_options(runs):
    work, _, _ = runs
    r = arbiter("merge", str(work / "m_twice"), str(work / "shard0"), str(work / "shard0"), ok=(2,))
    assert "twice" in r.stderr
    r = arbiter("merge", str(work / "m_full"), str(work / "local"), str(work / "shard1"), ok=(2,))
    assert "overlap" in r.stderr and "shard1" in r.stderr
    r = arbiter("merge", str(work / "m_opts"), str(work / "other"), str(work / "shard1"), ok=(2,))
    assert "time_limit" in r.stderr
    assert not (work / "m_opts" / "verdicts.jsonl").exists()


def test_goldilocks_reads_several_folders_per_model(runs):
    work, dataset, _ = runs
    common = ["curate", "goldilocks", "--dataset", str(dataset), "--no-english-filter", "--quiet",
              "--strong", str(work / "strong")]
    arbiter(*common, "--weak", str(work / "local"), "--out", str(work / "one.jsonl"))
    weak_args = [a for i in range(3) for a in ("--weak", str(work / f"shard{i}"))]
    arbiter(*common, *weak_args, "--out", str(work / "many.jsonl"))
    kept = (work / "many.jsonl").read_text().splitlines()
    assert kept and kept == (work / "one.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in (work / "many.jsonl").read_text().splitlines()]
    assert all(r["extra_info"]["lower_pass_rate"] == r["extra_info"]["upper_pass_rate"] for r in rows)
    r = arbiter(*common, *weak_args, "--weak", str(work / "other"), "--out", str(work / "bad.jsonl"), ok=(2,))
    assert "other" in r.stderr
