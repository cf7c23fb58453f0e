"""``arbiter curate consolidate`` (the card's step 3) through the real CLI on small verl rows: the flag recomputed,
annotations from extra_info and from a sidecar joined on data_source-qualified keys, re-index, ``code_`` prefix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from arbiter.datasets.io import read_jsonl
from arbiter.datasets.verl_rows import iter_raw_rows


def _row(ds: str, index: str, lower=None, upper=None, rid=None) -> dict:
    extra = {"index": index}
    if rid is not None:
        extra["id"] = rid
    if lower is not None:
        extra.update(lower_scores=lower, upper_scores=upper)
    return {"data_source": ds, "prompt": [{"role": "user", "content": f"problem {index}"}], "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]})},
            "extra_info": extra}


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arbiter.cli.main", "curate", "consolidate", *args],
                          capture_output=True, text=True)


def test_consolidate_extra_info_and_sidecar(tmp_path):
    one, zero = [1.0] * 8, [0.0] * 8
    half = [1.0, 0.0] * 4
    a = _write(tmp_path / "a.jsonl", [_row("taco", "7", half, half, rid="TACO_7"), _row("taco", "8", one, one),
                                      _row("primeintellect", "7", zero, zero), _row("code_lcbv5", "1", zero, [1.0] + zero[1:]),
                                      _row("taco", "9", one, zero)])  # floor+ceiling: in floor and in ceiling too
    b = _write(tmp_path / "b.jsonl", [_row("code_contests_o", "3"), _row("code_contests_o", "4"),
                                      _row("code_contests_o", "5")])
    side = _write(tmp_path / "side.jsonl", [
        {"data_source": "code_contests_o", "index": "3", "lower_scores": zero, "upper_scores": half,
         "lower_pass_rate": 0.0, "upper_pass_rate": 0.5},
        {"data_source": "code_contests_o", "index": "4", "lower_scores": one, "upper_scores": one},
        {"data_source": "code_contests_o", "index": "5", "lower_scores": zero, "upper_scores": half,
         "upper_pass_rate": 0.25}])  # inconsistent: a problem naming the row and the field
    out = tmp_path / "final.parquet"
    b.write_text(b.read_text() + "{oops\n")  # a line that is not JSON: a problem naming its line, the batch goes on
    r = _cli("--source", f"deepcoder={a}", "--source", f"cco={b}", "--sidecar", f"cco={side}", "--out", str(out))
    assert r.returncode == 1, r.stderr
    rows = list(iter_raw_rows(out))
    got = [(x["data_source"], x["extra_info"]["index"], x["extra_info"]["id"], x["extra_info"]["lower_pass_rate"],
            x["extra_info"]["upper_pass_rate"]) for x in rows]
    assert got == [("code_taco", "deepcoder_0", "TACO_7", 0.5, 0.5), ("code_lcbv5", "deepcoder_1", "1", 0.0, 0.125),
                   ("code_contests_o", "cco_0", "3", 0.0, 0.5)]
    assert rows[0]["extra_info"]["upper_scores"] == half
    report = json.loads((tmp_path / "final.report.json").read_text())
    assert report["counts"]["deepcoder"] == {"candidates": 5, "kept": 2, "floor": 2, "ceiling": 2, "floor+ceiling": 1,
                                             "problems": 0}
    assert "│ deepcoder │          5 │    2 │     2 │       2 │             1 │" in r.stdout
    assert report["counts"]["cco"]["ceiling"] == 1
    assert report["problems"] and "row 2" in report["problems"][0] and "upper_pass_rate" in report["problems"][0]
    assert report["counts"]["cco"]["problems"] == 2 and "b.jsonl line 4: not valid JSON" in report["problems"][1]
    assert not (tmp_path / ".arbiter.lock").exists()  # the run's lock file goes with it (it stayed in the folder)


def test_consolidate_missing_annotation_names_row_and_field(tmp_path):
    a = _write(tmp_path / "a.jsonl", [_row("taco", "1")])
    r = _cli("--source", f"deepcoder={a}", "--out", str(tmp_path / "o.jsonl"))
    assert r.returncode == 1
    report = json.loads((tmp_path / "o.report.json").read_text())
    assert "'taco:1'" in report["problems"][0] and "extra_info.lower_scores" in report["problems"][0]
    assert list(read_jsonl(tmp_path / "o.jsonl")) == []
    bad = _cli("--source", f"deepcoder={a}", "--source", f"deepcoder={a}", "--out", str(tmp_path / "o.jsonl"))
    assert bad.returncode == 2 and "twice" in bad.stderr


def _audit(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arbiter.cli.main", "curate", "audit", "--dataset", str(path),
                           "--no-english-filter"], capture_output=True, text=True)


def test_consolidate_keeps_only_rows_the_audit_passes(tmp_path):
    """A side with a score count other than the source's usual one (a lost completion: pass rates in sevenths) or a
    score other than 0 and 1 (a fraction-scored completion) is a problem naming row and field, as `audit` flags it;
    what consolidate writes passes `audit`."""
    zero, half = [0.0] * 8, [1.0, 0.0] * 4
    rows = [_row("taco", "1", zero, half), _row("taco", "2", [1.0] + [0.0] * 6, half),
            _row("taco", "3", zero, [0.5] + half[1:]), _row("taco", "4", zero, half)]
    a = _write(tmp_path / "a.jsonl", rows)
    before = _audit(a)
    assert before.returncode == 1 and "count_mismatch" in before.stdout + before.stderr
    out = tmp_path / "final.jsonl"
    r = _cli("--source", f"deepcoder={a}", "--out", str(out))
    assert r.returncode == 1, r.stderr
    report = json.loads((tmp_path / "final.report.json").read_text())
    assert report["sources"][0]["k"] == {"lower": 8, "upper": 8}
    assert report["counts"]["deepcoder"]["problems"] == 2 and report["counts"]["deepcoder"]["kept"] == 2
    seven, fraction = report["problems"]
    assert "'taco:2'" in seven and "extra_info.lower_scores: 7 scores, expected 8" in seven
    assert "'taco:3'" in fraction and "extra_info.upper_scores" in fraction and "0.5" in fraction
    assert [x["extra_info"]["id"] for x in read_jsonl(out)] == ["1", "4"]
    after = _audit(out)
    assert after.returncode == 0, after.stdout + after.stderr


def test_consolidate_k_option_and_sidecar_counts(tmp_path):
    """``--k`` holds every row to that count (the card's 8), from extra_info and from a sidecar alike."""
    zero, half = [0.0] * 4, [1.0, 0.0] * 2
    a = _write(tmp_path / "a.jsonl", [_row("taco", "1", zero, half), _row("taco", "2", zero, half)])
    b = _write(tmp_path / "b.jsonl", [_row("code_contests_o", "3")])
    side = _write(tmp_path / "side.jsonl", [{"data_source": "code_contests_o", "index": "3", "lower_scores": [0.0] * 8,
                                            "upper_scores": [1.0, 0.0] * 4}])
    r = _cli("--source", f"deepcoder={a}", "--source", f"cco={b}", "--sidecar", f"cco={side}", "--k", "8",
             "--out", str(tmp_path / "o.jsonl"))
    assert r.returncode == 1, r.stderr
    report = json.loads((tmp_path / "o.report.json").read_text())
    assert report["options"]["k"] == 8 and report["counts"]["deepcoder"]["problems"] == 2
    assert report["counts"]["cco"]["kept"] == 1
    assert all("4 scores, expected 8" in p for p in report["problems"])
    default = _cli("--source", f"deepcoder={a}", "--out", str(tmp_path / "d.jsonl"))
    assert default.returncode == 0, default.stderr  # (each source's most common count: 4)
    bad = _cli("--source", f"deepcoder={a}", "--k", "0", "--out", str(tmp_path / "e.jsonl"))
    assert bad.returncode == 2 and "--k" in bad.stderr
