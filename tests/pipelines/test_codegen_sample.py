"""The codegen sample shipped in ``data/codegen``: its files are what ``make.py`` builds, and the commands of
its README score every response as ``make.py`` says it was built (correct or not), keep exactly the rows its
README's table keeps, and agree with ``compute_score`` on every response."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from typer.testing import CliRunner

from arbiter.cli.main import app
from arbiter.datasets.io import read_jsonl
from arbiter.verl.reward import compute_score

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "codegen"
runner = CliRunner()


def _make():
    spec = importlib.util.spec_from_file_location("codegen_sample_make", SAMPLE / "make.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_files_are_what_make_builds():
    make = _make()
    for name, records in (("rows.jsonl", make.rows()), ("weak.jsonl", make.completions("weak")),
                          ("strong.jsonl", make.completions("strong"))):
        assert list(read_jsonl(SAMPLE / name)) == records, name


def test_the_readme_commands_score_and_keep_what_the_sample_was_built_for(tmp_path):
    expected = _make().EXPECTED
    for model in ("weak", "strong"):
        result = runner.invoke(app, ["score", "--dataset", str(SAMPLE / "rows.jsonl"), "--completions",
                                     str(SAMPLE / f"{model}.jsonl"), "--out", str(tmp_path / model), "--quiet"])
        assert result.exit_code == 0, result.output
        got: dict[str, list[int]] = {}
        for v in sorted(read_jsonl(tmp_path / model / "verdicts.jsonl"), key=lambda v: v["response_idx"]):
            got.setdefault(v["row_key"], []).append(int(v["score"] == 1.0))
        assert got == expected[model], model
    result = runner.invoke(app, ["curate", "goldilocks", "--dataset", str(SAMPLE / "rows.jsonl"), "--weak",
                                 str(tmp_path / "weak"), "--strong", str(tmp_path / "strong"), "--out",
                                 str(tmp_path / "kept.jsonl"), "--quiet"])
    assert result.exit_code == 0, result.output
    decisions = {d["row_key"]: d["decision"] for d in read_jsonl(tmp_path / "kept.rows.jsonl")}
    assert decisions == {"code_contests_o:sample_sum": "kept", "code_taco:sample_reverse": "ceiling",
                         "code_primeintellect:sample_primes": "floor", "code_primeintellect:sample_pair": "kept"}
    verdicts = {v["key"]: v for v in read_jsonl(tmp_path / "weak" / "verdicts.jsonl")}
    for row, completion in zip(read_jsonl(SAMPLE / "rows.jsonl"), read_jsonl(SAMPLE / "weak.jsonl")):
        for i, response in enumerate(completion["responses"]):
            r = compute_score(row["data_source"], response, row["reward_model"]["ground_truth"], row["extra_info"])
            v = verdicts[f"{completion['key']}#{i}"]
            assert (r["score"], r["verdict"]) == (v["score"], v["verdict"]), (completion["key"], i)
    result = runner.invoke(app, ["report", str(tmp_path / "kept.jsonl"), str(tmp_path / "weak"), "--out",
                                 str(tmp_path / "report")])
    assert result.exit_code == 0, result.output
    sections = {s["kind"]: s["data"] for s in json.loads((tmp_path / "report" / "report.json").read_text())["sections"]}
    assert sections["dataset"]["rows"] == 2 and sections["score"]["problems"] == 4
    assert sum(sections["score"]["verdicts"].values()) == 32  # (4 rows x 8 responses)
