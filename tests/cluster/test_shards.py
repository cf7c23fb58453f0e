"""Shards without Ray: ``arbiter score --shard i/N`` + ``arbiter merge`` give the single run's files; merging
shards that overlap, were scored with other options or another N, or do not make a whole finished run is
refused (``--allow-partial`` merges what there is and says what is missing); ``arbiter curate goldilocks``
reads several folders per model (the shards) as the one folder of a single run, after the same checks."""

from __future__ import annotations

import json
import shutil
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
    arbiter(*base, "--out", str(work / "half0"), "--shard", "0/2")
    arbiter(*base, "--out", str(work / "strong"))  # the "strong model": another folder of the same scores
    return work, dataset, expected


def said(r) -> str:
    """The command's stderr with rich's line wrapping undone."""
    return " ".join(r.stderr.split())


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
    assert "is not a shard" in said(r) and "local" in said(r)
    r = arbiter("merge", str(work / "m_opts"), str(work / "other"), str(work / "shard1"), ok=(2,))
    assert "time_limit" in r.stderr
    assert not (work / "m_opts" / "verdicts.jsonl").exists()


def test_merge_refuses_a_missing_repeated_or_other_n_shard(runs):
    work, _, _ = runs
    r = arbiter("merge", str(work / "m_missing"), str(work / "shard0"), str(work / "shard1"), ok=(2,))
    assert "shard(s) 2/3 missing" in said(r)
    shutil.copytree(work / "shard0", work / "shard0_copy")
    r = arbiter("merge", str(work / "m_repeated"), *(str(work / f"shard{i}") for i in range(3)),
                str(work / "shard0_copy"), ok=(2,))
    assert "shard 0/3 is given twice" in said(r) and "shard0_copy" in said(r)
    r = arbiter("merge", str(work / "m_mixed"), str(work / "half0"), str(work / "shard1"), ok=(2,))
    assert "shard 1/3" in said(r) and "shard 0/2" in said(r) and "different N" in said(r)
    assert not any((work / m).exists() for m in ("m_missing", "m_repeated", "m_mixed"))


def test_merge_waits_for_an_interrupted_shard_to_be_resumed(runs):
    work, dataset, _ = runs
    shutil.copytree(work / "shard1", work / "cut1")  # what a kill leaves: part of the verdicts, no summary
    lines = (work / "shard1" / "verdicts.jsonl").read_text().splitlines(keepends=True)
    kept = len(lines) // 2
    assert 0 < kept < len(lines)
    (work / "cut1" / "verdicts.jsonl").write_text("".join(lines[:kept]))
    (work / "cut1" / "summary.json").unlink()
    shards = [str(work / "shard0"), str(work / "cut1"), str(work / "shard2")]
    r = arbiter("merge", str(work / "m_cut"), *shards, ok=(2,))
    assert "cut1" in said(r) and f"did not finish: {len(lines) - kept} of its {len(lines)} responses" in said(r)

    r = arbiter("merge", str(work / "m_partial"), *shards[:2], "--allow-partial")
    assert "partial merge: shard(s) 2/3 not given" in said(r)
    partial = json.loads((work / "m_partial" / "summary.json").read_text())["partial"]
    shard2 = len((work / "shard2" / "verdicts.jsonl").read_text().splitlines())
    assert partial == {"missing_shards": ["2/3"], "unfinished_shards": {str(work / "cut1"): len(lines) - kept},
                       "responses_without_verdict": len(lines) - kept + shard2}

    score = ["score", "--dataset", str(dataset), "--completions", str(work / "completions.jsonl"), "--quiet"]
    arbiter(*score, "--out", str(work / "cut1"), "--shard", "1/3")
    arbiter("merge", str(work / "m_resumed"), *shards)
    arbiter(*score, "--out", str(work / "m_partial"))  # a partial merge is finished as a single run
    for name in ("verdicts.jsonl", "problems.jsonl", "summary.json"):
        assert without_timing(work / "m_resumed" / name) == without_timing(work / "local" / name), name
    assert json.loads((work / "m_partial" / "summary.json").read_text())["overall"] == \
        json.loads((work / "local" / "summary.json").read_text())["overall"]


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


def test_a_shard_holding_a_row_it_cannot_score_is_finished(tmp_path):
    """A dataset row that cannot be scored (no ``reward_model``) gets no verdict, only its ``errors.jsonl``
    entry: the shard holding it finished all the same, and its merge is the single run's."""
    sq = {"inputs": ["3\n", "4\n"], "outputs": ["9\n", "16\n"]}
    rows = [{"data_source": "code_taco", "prompt": [], "ability": "code", "extra_info": {"index": f"r{i}"},
             "reward_model": {"style": "rule", "ground_truth": json.dumps(sq)}} for i in range(6)]
    for broken in (rows[1], rows[4]):
        del broken["reward_model"]
    dataset, completions = tmp_path / "d.jsonl", tmp_path / "c.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = "```python\nn = int(input())\nprint(n * n)\n```"
    completions.write_text("".join(json.dumps({"index": f"r{i}", "responses": [code, "no code"]}) + "\n"
                                   for i in range(6)))
    base = ["score", "--dataset", str(dataset), "--completions", str(completions), "--quiet"]
    arbiter(*base, "--out", str(tmp_path / "local"))
    for i in range(2):
        arbiter(*base, "--out", str(tmp_path / f"s{i}"), "--shard", f"{i}/2")
    arbiter("merge", str(tmp_path / "merged"), str(tmp_path / "s0"), str(tmp_path / "s1"))
    for name in ("verdicts.jsonl", "problems.jsonl"):
        assert without_timing(tmp_path / "merged" / name) == without_timing(tmp_path / "local" / name), name
    merged, local = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("merged", "local"))
    assert merged["overall"] == local["overall"] and local["errors_this_run"] == 2  # (a merge runs nothing)
    assert len((tmp_path / "merged" / "verdicts.jsonl").read_text().splitlines()) == 8


def test_goldilocks_refuses_shards_that_are_not_one_whole_run(runs):
    """As ``arbiter merge`` does: a missing, repeated or other-N shard, or a single run's folder among shards,
    exits 2 naming it, before anything is written (a missing shard's rows were dropped as ``missing``)."""
    work, dataset, _ = runs
    common = ["curate", "goldilocks", "--dataset", str(dataset), "--no-english-filter", "--quiet",
              "--strong", str(work / "strong"), "--out", str(work / "refused.jsonl")]
    shutil.copytree(work / "shard0", work / "gold_copy0")
    for weak, said_part in ((["shard0", "shard1"], "shard(s) 2/3 missing"), (["shard2"], "shard(s) 0/3, 1/3 missing"),
                            (["half0", "shard1", "shard2"], "different N"),
                            (["shard0", "shard1", "shard2", "gold_copy0"], "shard 0/3 is given twice"),
                            (["local", "shard1"], "local is not a shard")):
        r = arbiter(*common, *(a for w in weak for a in ("--weak", str(work / w))), ok=(2,))
        assert "--weak" in said(r) and said_part in said(r), weak
    assert not (work / "refused.jsonl").exists() and not (work / "refused.report.json").exists()


def test_goldilocks_refuses_an_interrupted_shard_unless_allow_partial(runs):
    work, dataset, _ = runs
    shutil.copytree(work / "shard1", work / "gold_cut1")  # what a kill leaves: part of the verdicts, no summary
    lines = (work / "shard1" / "verdicts.jsonl").read_text().splitlines(keepends=True)
    (work / "gold_cut1" / "verdicts.jsonl").write_text("".join(lines[:len(lines) // 2]))
    (work / "gold_cut1" / "summary.json").unlink()
    common = ["curate", "goldilocks", "--dataset", str(dataset), "--no-english-filter", "--quiet",
              "--lower-max", "1", "--upper-min", "0", "--strong", str(work / "strong"),
              "--weak", str(work / "shard0"), "--weak", str(work / "gold_cut1")]
    r = arbiter(*common, "--weak", str(work / "shard2"), "--out", str(work / "cut.jsonl"), ok=(2,))
    assert "gold_cut1 (shard 1/3) did not finish" in said(r) and not (work / "cut.jsonl").exists()

    arbiter(*common, "--allow-partial", "--out", str(work / "partial.jsonl"), ok=(1,))
    report = json.loads((work / "partial.report.json").read_text())
    assert any("2/3 not given" in w for w in report["warnings"])
    assert any("gold_cut1 (shard 1/3) did not finish" in w for w in report["warnings"])
    judged = [json.loads(x)["row_key"] for d in ("shard0", "gold_cut1")
              for x in (work / d / "verdicts.jsonl").read_text().splitlines()]
    whole = {k for k in judged if judged.count(k) == 3}
    kept = [json.loads(x) for x in (work / "partial.jsonl").read_text().splitlines()]
    assert {f"{r['data_source']}:{r['extra_info']['index']}" for r in kept} == whole
    assert all(len(r["extra_info"]["lower_scores"]) == 3 for r in kept)
