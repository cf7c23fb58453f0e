"""``arbiter score``: per-response verdicts, pass rate, unbiased pass@k, the table by data_source;
completion keys, bad records, resumability after a kill, SANDBOX_ERROR handling, flat memory."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from arbiter.cli.main import app
from arbiter.pipelines.codegen import pass_at_k, score_completions

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
ARBITER = [sys.executable, "-m", "arbiter.cli.main"]


def md(code: str) -> str:
    return f"Sure.\n```python\n{code}\n```\n"


SUM = {"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]}
SUM_OK, SUM_WRONG = md("a, b = map(int, input().split())\nprint(a + b)"), md("print(0)")
CALL = [{"type": "function_call", "fn_name": "sq", "input": [n], "output": [n * n]} for n in (2, 3)]
CALL_OK, CALL_WRONG = md("def sq(n):\n    return n * n"), md("def sq(n):\n    return n + n")


def row(ds: str, index: str, gt) -> dict:
    return {"data_source": ds, "prompt": [{"role": "user", "content": f"problem {index}"}], "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": gt if isinstance(gt, str) else json.dumps(gt)},
            "extra_info": {"index": index}}


def write_parquet(path: Path, rows: list[dict]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ------------------------------------------------------------------ pass@k


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def test_pass_at_k_is_the_unbiased_estimator():
    for n in range(1, 13):
        for c in range(0, n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(float(exact_pass_at_k(n, c, k)), abs=1e-12)
    assert pass_at_k(8, 0, 8) == 0.0 and pass_at_k(8, 1, 8) == 1.0 and pass_at_k(8, 2, 1) == 0.25
    # large n: the product form stays finite where the binomials would be enormous
    assert pass_at_k(2000, 3, 100) == pytest.approx(float(exact_pass_at_k(2000, 3, 100)), rel=1e-9)
    for bad in ((4, 5, 1), (4, 1, 0), (4, 1, 5), (4, -1, 1)):
        with pytest.raises(ValueError):
            pass_at_k(*bad)


# ------------------------------------------------------------------ end to end


@pytest.fixture()
def small(tmp_path):
    rows = [
        row("taco", "t0", SUM),
        row("code_primeintellect", "p1", CALL),
        row("code_lcbv5", "t0", [{"type": "stdin_stdout", "input": i, "output": o} for i, o in zip(SUM["inputs"], SUM["outputs"])]),
        row("code_taco", "bad", {"inputs": [], "outputs": []}),
        row("gsm8k", "m0", "42"),
        row("code_taco", "nocomp", SUM),
    ]
    dataset = write_parquet(tmp_path / "d.parquet", rows)
    completions = write_jsonl(tmp_path / "c.jsonl", [
        {"key": "code_primeintellect:p1", "responses": [CALL_OK, CALL_WRONG]},
        {"data_source": "taco", "index": "t0", "responses": [SUM_OK, SUM_WRONG, "I cannot solve this."]},
        {"index": "t0", "responses": [SUM_OK]},               # ambiguous: taco and code_lcbv5
        {"index": "nope", "responses": [SUM_OK]},             # no such row
        {"row": 2, "responses": [SUM_OK, SUM_OK]},            # code_lcbv5:t0 by position
        {"index": "bad", "responses": [SUM_OK]},              # INVALID_TASK row
        {"index": "m0", "responses": ["42"]},                 # non-code data_source
        {"key": "code_primeintellect:p1", "responses": [CALL_OK]},  # merged: response #2
        {"index": "p1", "responses": "not a list"},
        "not json",
    ])
    return dataset, completions


def test_score_cli_end_to_end(small, tmp_path):
    dataset, completions = small
    out = tmp_path / "out"
    result = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions),
                                 "--out", str(out), "--quiet", "--workers", "2"])
    assert result.exit_code == 0, result.output
    verdicts = {v["key"]: v for v in read_jsonl(out / "verdicts.jsonl")}
    assert sorted(verdicts) == sorted([
        "code_primeintellect:p1#0", "code_primeintellect:p1#1", "code_primeintellect:p1#2",
        "taco:t0#0", "taco:t0#1", "taco:t0#2", "code_lcbv5:t0#0", "code_lcbv5:t0#1",
        "code_taco:bad#0", "gsm8k:m0#0"])
    assert [verdicts[f"taco:t0#{i}"]["verdict"] for i in range(3)] == ["AC", "WA", "FORMAT_ERROR"]
    assert [verdicts[f"code_primeintellect:p1#{i}"]["score"] for i in range(3)] == [1.0, 0.0, 1.0]
    assert verdicts["code_taco:bad#0"]["verdict"] == "INVALID_TASK"
    assert verdicts["gsm8k:m0#0"]["verdict"] == "INVALID_TASK" and "gsm8k" in verdicts["gsm8k:m0#0"]["reason"]
    v = verdicts["taco:t0#0"]
    assert (v["row_key"], v["response_idx"], v["data_source"], v["index"]) == ("taco:t0", 0, "taco", "t0")
    assert {"score", "verdict", "passed", "total", "reason", "seconds"} <= set(v)

    errors = read_jsonl(out / "errors.jsonl")
    messages = " | ".join(e["message"] for e in errors)
    assert len(errors) == 4 and {e["kind"] for e in errors} == {"completions"}
    assert "shared by rows" in messages and "matches no dataset row" in messages
    assert "must be a list" in messages and "not valid JSON" in messages

    problems = {p["row_key"]: p for p in read_jsonl(out / "problems.jsonl")}
    p1 = problems["code_primeintellect:p1"]
    assert (p1["n"], p1["c"]) == (3, 2) and p1["pass_rate"] == pytest.approx(2 / 3)
    assert p1["pass_at_k"] == {"1": pytest.approx(2 / 3), "2": 1.0, "3": 1.0}
    assert problems["taco:t0"]["pass_at_k"]["2"] == pytest.approx(1 - 1 / 3)
    assert problems["code_taco:bad"]["invalid"] and problems["code_taco:bad"]["pass_rate"] is None

    summary = json.loads((out / "summary.json").read_text())
    overall = summary["overall"]
    assert overall["problems"] == 3 and overall["invalid_problems"] == 2 and overall["responses"] == 8
    assert overall["invalid_responses"] == 2  # (left out of responses, as in arbiter report: audit)
    assert overall["mean_pass_rate"] == pytest.approx((2 / 3 + 1 / 3 + 1) / 3)
    assert overall["pass_at_k"]["1"] == pytest.approx((2 / 3 + 1 / 3 + 1) / 3)
    assert overall["problems_at_k"] == {"1": 3, "2": 3, "3": 2}
    assert set(summary["by_data_source"]) == {"taco", "code_primeintellect", "code_lcbv5", "code_taco", "gsm8k"}
    assert summary["by_data_source"]["code_lcbv5"]["pass_at_k"] == {"1": 1.0, "2": 1.0}
    assert "overall" in result.output and "code_primeintellect" in result.output  # the table

    again = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions),
                                "--out", str(out), "--quiet"])
    assert again.exit_code == 0 and "0 scored now, 10 already done" in again.output.replace("\n", " ")
    assert len(read_jsonl(out / "verdicts.jsonl")) == 10
    assert json.loads((out / "summary.json").read_text())["overall"] == overall


def test_score_jsonl_and_hf_datasets(small, tmp_path):
    import datasets

    dataset, completions = small
    rows = pq.read_table(dataset).to_pylist()
    as_jsonl = write_jsonl(tmp_path / "d.jsonl", rows)
    datasets.Dataset.from_parquet(str(dataset)).save_to_disk(str(tmp_path / "hf"))
    outs = []
    for src in (dataset, as_jsonl, tmp_path / "hf"):
        out = tmp_path / f"out-{src.name}"
        result = runner.invoke(app, ["score", "--dataset", str(src), "--completions", str(completions), "--out",
                                     str(out), "--quiet", "--parity", "prime_code"])
        assert result.exit_code == 0, result.output
        outs.append(json.loads((out / "summary.json").read_text())["overall"])
    assert outs[0] == outs[1] == outs[2]
    bad = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions), "--out",
                              str(tmp_path / "x"), "--parity", "nope"])
    assert bad.exit_code == 2 and "parity" in bad.output


SLOW_OK = md("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.15:\n    pass\n"
             "a, b = map(int, input().split())\nprint(a + b)")


def _wait_for_verdicts(proc: subprocess.Popen, verdicts: Path, n: int) -> None:
    """Wait until the running ``arbiter score`` has written ``n`` verdicts (it must still be running then)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if verdicts.exists() and verdicts.read_text().count("\n") >= n:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be interrupted"


def test_resume_after_kill_has_no_duplicates_and_same_result(tmp_path):
    n_rows, per_row = 12, 4
    rows = [row("code_taco", f"r{i}", SUM) for i in range(n_rows)]
    dataset = write_parquet(tmp_path / "d.parquet", rows)
    # every program distinct (a comment), so none is a reused verdict and the run takes its time
    recs = [{"index": f"r{i}", "responses": [(SLOW_OK if (i + j) % 3 else SUM_WRONG).replace(
                "```python\n", f"```python\n# {i}.{j}\n") for j in range(per_row)]}
            for i in reversed(range(n_rows))]  # completions in another order than the dataset
    completions = write_jsonl(tmp_path / "c.jsonl", recs)
    out = tmp_path / "out"
    cmd = [*ARBITER, "score", "--dataset", str(dataset), "--completions", str(completions), "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    verdicts = out / "verdicts.jsonl"
    _wait_for_verdicts(proc, verdicts, 10)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = read_jsonl(verdicts)
    assert 10 <= len(partial) < n_rows * per_row
    # a line torn by the kill is repaired when the sink reopens it
    with open(verdicts, "a") as f:
        f.write('{"key": "code_taco:r0#')
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{len(partial)} already done" in done.stderr.replace("\n", " ")
    final = read_jsonl(verdicts)
    keys = [v["key"] for v in final]
    assert len(keys) == len(set(keys)) == n_rows * per_row
    assert {v["key"]: v["score"] for v in partial}.items() <= {v["key"]: v["score"] for v in final}.items()
    fresh = tmp_path / "fresh"
    subprocess.run([*cmd[:-3], "--out", str(fresh), "--quiet"], cwd=REPO, check=True, capture_output=True, timeout=300)
    assert json.loads((out / "summary.json").read_text())["overall"] == \
        json.loads((fresh / "summary.json").read_text())["overall"]
    assert json.loads((fresh / "summary.json").read_text())["overall"]["mean_pass_rate"] == pytest.approx(
        sum(sum(1 for j in range(per_row) if (i + j) % 3) / per_row for i in range(n_rows)) / n_rows)


def test_ctrl_c_says_what_is_kept_and_the_rerun_resumes(tmp_path):
    """Ctrl-C ended the run silently (exit 130, the bar left as it was: a new user's trial)."""
    rows = [row("code_taco", f"r{i}", SUM) for i in range(6)]
    dataset = write_parquet(tmp_path / "d.parquet", rows)
    recs = [{"index": f"r{i}", "responses": [SLOW_OK.replace("```python\n", f"```python\n# {i}.{j}\n")
                                             for j in range(4)]} for i in range(6)]
    completions = write_jsonl(tmp_path / "c.jsonl", recs)
    out = tmp_path / "out"
    cmd = [*ARBITER, "score", "--dataset", str(dataset), "--completions", str(completions), "--out", str(out), "--quiet"]
    # (SIGINT as a terminal leaves it: a shell's background job, as a CI run may be, starts with it ignored)
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    verdicts = out / "verdicts.jsonl"
    _wait_for_verdicts(proc, verdicts, 2)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted: what was written to" in " ".join(err.split()) and "Traceback" not in err, err
    kept = len(read_jsonl(verdicts))
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and f"{kept} already done" in " ".join(done.stderr.split()), done.stderr


def test_sandbox_errors_are_not_recorded_and_rerun_retries_them(small, tmp_path):
    dataset, completions = small
    out = tmp_path / "out"
    broken = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions), "--out",
                                 str(out), "--quiet"], env={"ARBITER_SANDBOX_PYTHON": "/nonexistent/python3"})
    assert broken.exit_code == 1, broken.output
    assert "SANDBOX_ERROR" in broken.output
    written = {v["key"]: v["verdict"] for v in read_jsonl(out / "verdicts.jsonl")}
    # only responses that needed no sandbox were recorded; nothing was scored 0 for our failure
    assert written == {"taco:t0#2": "FORMAT_ERROR", "code_taco:bad#0": "INVALID_TASK", "gsm8k:m0#0": "INVALID_TASK"}
    sandbox_errors = [e for e in read_jsonl(out / "errors.jsonl") if e["kind"] == "sandbox_error"]
    assert len(sandbox_errors) == 7 and all("SANDBOX_ERROR" in e["message"] for e in sandbox_errors)
    fixed = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions), "--out",
                                str(out), "--quiet"])
    assert fixed.exit_code == 0, fixed.output
    assert len(read_jsonl(out / "verdicts.jsonl")) == 10
    assert not [e for e in read_jsonl(out / "errors.jsonl") if e["kind"] == "sandbox_error"]


MEMORY_PROBE = textwrap.dedent('''
    import functools, json, sys
    from arbiter.pipelines.codegen import score_completions
    from arbiter.verl.reward import RewardOptions, iter_scores
    run = score_completions(sys.argv[1], sys.argv[2], sys.argv[3],
                            scorer=functools.partial(iter_scores, opts=RewardOptions(), raise_errors=False))
    hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    print(json.dumps({"hwm_kib": hwm, "judged": run.judged, "responses": run.responses}))
''')


def synthetic(tmp_path: Path, n_rows: int, per_row: int = 8) -> tuple[Path, Path, int]:
    """n_rows problems with ~80 cases each (the card's mean is 82) and per_row responses of ~4 KB
    of prose without a code block (FORMAT_ERROR: the streaming machinery without sandboxes), plus
    one real program per 300 rows that is judged."""
    gt = json.dumps({"inputs": [f"{i} {i}\n" for i in range(80)], "outputs": [f"{2 * i}\n" for i in range(80)]})
    prose = "Let me think about this problem step by step. " * 90
    dataset = tmp_path / f"d{n_rows}.parquet"
    writer = pq.ParquetWriter(dataset, pa.Table.from_pylist([row("code_taco", "x", gt)]).schema)
    for start in range(0, n_rows, 500):
        writer.write_table(pa.Table.from_pylist([row("code_taco", f"r{i}", gt) for i in range(start, min(n_rows, start + 500))]))
    writer.close()
    completions = tmp_path / f"c{n_rows}.jsonl"
    with open(completions, "w") as f:
        for i in range(n_rows):
            responses = [f"{prose} attempt {j}" for j in range(per_row)]
            if i % 300 == 0:
                responses[0] = SUM_OK
            f.write(json.dumps({"index": f"r{i}", "responses": responses}) + "\n")
    size = dataset.stat().st_size + completions.stat().st_size
    return dataset, completions, size


def test_memory_stays_flat_as_the_data_grows(tmp_path):
    """Peak RSS of a scoring run (judging included) barely moves when the data grows tenfold:
    rows and responses are streamed; only per-row keys and counts stay in memory.
    (bench/score.py measures the card's full 14,927 x 8.)"""
    peaks = {}
    for n in (300, 3000):
        dataset, completions, size = synthetic(tmp_path, n)
        probe = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(dataset), str(completions), str(tmp_path / f"o{n}")],
                               cwd=REPO, capture_output=True, text=True, timeout=600)
        assert probe.returncode == 0, probe.stderr
        got = json.loads(probe.stdout.strip().splitlines()[-1])
        assert got["responses"] == 8 * n and got["judged"] == 8 * n
        peaks[n] = (got["hwm_kib"] * 1024, size)
    grew = peaks[3000][0] - peaks[300][0]
    data_grew = peaks[3000][1] - peaks[300][1]
    assert data_grew > 80 << 20
    assert grew < data_grew / 8, (grew, data_grew, peaks)


# ------------------------------------------------------------------ reruns: same inputs resume, others are refused


def _score(dataset: Path, completions: Path, out: Path, *extra: str):
    return runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions),
                               "--out", str(out), "--quiet", *extra])


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture()
def stale(tmp_path):
    """The QA repro: one row, a wrong (A) and a right (B) completions file."""
    gt = json.dumps({"inputs": ["3\n1 2 3\n"], "outputs": ["6\n"]})
    dataset = write_jsonl(tmp_path / "ds.jsonl", [row("code_contests_o", "cco_0", gt)])
    a = write_jsonl(tmp_path / "A.jsonl", [{"index": "cco_0", "responses": ["```python\nprint(1)\n```"]}])
    b = write_jsonl(tmp_path / "B.jsonl", [{"index": "cco_0", "responses": [
        "```python\nn=int(input()); print(sum(map(int,input().split())))\n```"]}])
    return dataset, a, b, gt


def test_rerun_with_other_inputs_or_options_is_refused(stale, tmp_path):
    dataset, a, b, gt = stale
    out = tmp_path / "s"
    first = _score(dataset, a, out)
    assert first.exit_code == 0, first.output
    (v,) = read_jsonl(out / "verdicts.jsonl")
    assert v["verdict"] == "WA"
    config = json.loads((out / "config.json").read_text())
    assert config["completions"]["sha256"] == _sha(a.read_text())
    assert config["dataset"]["sha256"] == _sha(dataset.read_text())
    before = {name: (out / name).read_text() for name in ("verdicts.jsonl", "errors.jsonl", "summary.json",
                                                          "config.json")}

    other_gt = write_jsonl(tmp_path / "ds2.jsonl", [row("code_contests_o", "cco_0", gt.replace("6\\n", "7\\n"))])
    refused = {
        "completions": _score(dataset, b, out),
        "dataset": _score(other_gt, a, out),
        "option checker": _score(dataset, a, out, "--checker", "exact"),
        "option time_limit": _score(dataset, a, out, "--time-limit", "0.5"),
        "option parity": _score(dataset, a, out, "--parity", "prime_code"),
        "option case_insensitive": _score(dataset, a, out, "--case-insensitive"),
        "option memory_limit_mb": _score(dataset, a, out, "--memory-limit", "256"),
    }
    for what, result in refused.items():
        text = " ".join(result.output.split())
        assert result.exit_code == 2, (what, result.output)
        assert what in text and "--out" in text and str(out.name) in text, (what, text)
    # nothing in the folder was touched by the refused runs
    assert before == {name: (out / name).read_text() for name in before}
    # the same inputs and options resume (workers do not change verdicts)
    same = _score(dataset, a, out, "--workers", "1")
    assert same.exit_code == 0 and "0 scored now, 1 already done" in " ".join(same.output.split())
    # B into a new folder is judged on its own
    fresh = _score(dataset, b, tmp_path / "s2")
    assert fresh.exit_code == 0 and [v["verdict"] for v in read_jsonl(tmp_path / "s2" / "verdicts.jsonl")] == ["AC"]


def test_records_carry_hashes_and_are_never_reused_for_another_response(stale, tmp_path):
    dataset, a, b, gt = stale
    out = tmp_path / "s"
    assert _score(dataset, a, out).exit_code == 0
    (v,) = read_jsonl(out / "verdicts.jsonl")
    assert v["response_sha256"] == _sha(json.loads(a.read_text())["responses"][0])
    assert v["ground_truth_sha256"] == _sha(gt)
    # a folder whose config.json says B (edited by hand, copied around, ...) but whose record was made for A:
    # the record is judged again for B's response and replaced, not reused and not duplicated
    config = json.loads((out / "config.json").read_text())
    config["completions"] = {**config["completions"], "sha256": _sha(b.read_text())}
    (out / "config.json").write_text(json.dumps(config))
    rerun = _score(dataset, b, out)
    assert rerun.exit_code == 0, rerun.output
    assert "1 scored now, 0 already done" in " ".join(rerun.output.split())
    (v,) = read_jsonl(out / "verdicts.jsonl")
    assert v["verdict"] == "AC" and v["response_sha256"] == _sha(json.loads(b.read_text())["responses"][0])
    assert json.loads((out / "summary.json").read_text())["overall"]["correct"] == 1
    (p,) = read_jsonl(out / "problems.jsonl")
    assert (p["n"], p["c"]) == (1, 1)
    assert any(e["kind"] == "stale_verdicts" for e in read_jsonl(out / "errors.jsonl"))
    # a run killed after appending the replacement but before dropping the stale record: the next run
    # keeps the last record and counts the response once
    verdicts = out / "verdicts.jsonl"
    verdicts.write_text(json.dumps(stale_record := {**v, "verdict": "WA", "score": 0.0,
                                                    "response_sha256": _sha("old")}) + "\n" + verdicts.read_text())
    again = _score(dataset, b, out)
    assert again.exit_code == 0 and "0 scored now, 1 already done" in " ".join(again.output.split())
    assert read_jsonl(verdicts) == [v] and stale_record != v
    assert json.loads((out / "summary.json").read_text())["overall"]["correct"] == 1


def test_folder_with_verdicts_but_no_config_is_refused(stale, tmp_path):
    dataset, a, b, gt = stale
    out = tmp_path / "s"
    assert _score(dataset, a, out).exit_code == 0
    (out / "config.json").unlink()  # e.g. made by an arbiter without config.json
    result = _score(dataset, a, out)
    assert result.exit_code == 2 and "config.json" in " ".join(result.output.split())


def test_bad_dataset_rows_are_reported_and_the_run_goes_on(tmp_path):
    good = row("code_taco", "g", SUM)
    broken = {"data_source": "code_taco", "prompt": [], "extra_info": {"index": "b"}}  # no reward_model
    dataset = write_jsonl(tmp_path / "d.jsonl", [broken, good])
    completions = write_jsonl(tmp_path / "c.jsonl", [{"index": "b", "responses": [SUM_OK]},
                                                     {"index": "g", "responses": [SUM_OK, SUM_WRONG]}])
    out = tmp_path / "out"
    result = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions),
                                 "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert [v["key"] for v in read_jsonl(out / "verdicts.jsonl")] == ["code_taco:g#0", "code_taco:g#1"]
    (err,) = read_jsonl(out / "errors.jsonl")
    assert err["kind"] == "dataset" and "code_taco:b" in err["message"] and "reward_model" in err["message"]


# ------------------------------------------------------------------ unusable inputs: exit 2 before scoring


WIDE = {"COLUMNS": "500"}  # rich wraps at 80 columns otherwise, splitting long paths


def _binary() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8  # a PNG header, NULs, invalid UTF-8, a few newlines


def _flat(output: str) -> str:
    return " ".join(output.split())


def _refused(result, *needles: str) -> str:
    """exit 2, a one-line error naming what is wrong, no traceback, no progress bar."""
    text = _flat(result.output)
    assert result.exit_code == 2, result.output
    assert "error:" in text and "Traceback" not in result.output and "scoring" not in text, result.output
    for needle in needles:
        assert needle in text, (needle, result.output)
    return text


@pytest.mark.parametrize("kind", ["empty_jsonl", "blank_jsonl", "empty_parquet", "no_rows_parquet", "binary_jsonl",
                                  "binary_parquet", "not_json", "json_array_of_strings",
                                  "parquet_without_data_source"])
def test_unusable_dataset_exits_2_naming_the_file(kind, tmp_path):
    good = json.dumps(row("code_taco", "t0", SUM))
    name, content, needles = {
        "empty_jsonl": ("d.jsonl", b"", ["no rows"]),
        "blank_jsonl": ("d.jsonl", b"\n\n  \n", ["no rows"]),
        "empty_parquet": ("d.parquet", b"", ["not a readable Parquet file"]),
        "no_rows_parquet": ("d.parquet", None, ["no rows"]),
        "binary_jsonl": ("d.jsonl", _binary(), ["line 1", "not UTF-8 text"]),
        "binary_parquet": ("d.parquet", _binary(), ["not a readable Parquet file"]),
        "not_json": ("d.jsonl", b"id,question\n1,hello\n", ["line 1", "not valid JSON"]),
        "json_array_of_strings": ("d.json", b'["a", "b"]', ["item 0", "expected a JSON object"]),
        "parquet_without_data_source": ("d.parquet", None, ["no 'data_source' column"]),
    }[kind]
    dataset = tmp_path / name
    if kind == "no_rows_parquet":
        pq.write_table(pa.Table.from_pylist([row("code_taco", "t0", SUM)]).slice(0, 0), dataset)
    elif kind == "parquet_without_data_source":
        pq.write_table(pa.Table.from_pylist([{"question": "q", "answer": "a"}]), dataset)
    else:
        dataset.write_bytes(content)
    completions = write_jsonl(tmp_path / "c.jsonl", [{"index": "t0", "responses": [SUM_OK]}])
    out = tmp_path / "out"
    result = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions),
                                 "--out", str(out)], env=WIDE)
    _refused(result, "--dataset", str(dataset), *needles)
    assert not out.exists()  # checked before anything is created


@pytest.mark.parametrize("kind", ["empty", "blank", "binary", "not_json", "parquet", "gzip", "json_array",
                                  "nothing_matches"])
def test_unusable_completions_exit_2_naming_the_file(kind, tmp_path):
    import gzip

    dataset = write_parquet(tmp_path / "d.parquet", [row("code_taco", "t0", SUM)])
    good = json.dumps({"index": "t0", "responses": [SUM_OK]}) + "\n"
    content, needles = {
        "empty": (b"", ["empty (no records)"]),
        "blank": (b"\n \n\t\n", ["empty (no records)"]),
        "binary": (_binary(), ["not JSON Lines", "line 1", "not UTF-8 text"]),
        "not_json": (b"index,responses\nt0,print(3)\n", ["not JSON Lines", "line 1", "not valid JSON"]),
        "parquet": (None, ["a Parquet file", "JSON Lines"]),
        "gzip": (gzip.compress(good.encode()), ["gzip-compressed"]),
        "json_array": (json.dumps([{"index": "t0", "responses": [SUM_OK]}]).encode(),
                       ["not JSON Lines", "line 1", "expected a JSON object, got list"]),
        "nothing_matches": (b'{"index": "t9", "responses": ["x"]}\n{"key": "taco:t0", "responses": ["x"]}\n',
                            ["none of its 2 record(s) matches a row of --dataset", "line 1",
                             "index 't9' matches no dataset row"]),
    }[kind]
    completions = tmp_path / "c.jsonl"
    if kind == "parquet":
        pq.write_table(pa.Table.from_pylist([{"index": "t0", "responses": [SUM_OK]}]), completions)
    else:
        completions.write_bytes(content)
    out = tmp_path / "out"
    result = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions),
                                 "--out", str(out)], env=WIDE)
    _refused(result, "--completions", str(completions), *needles)
    assert not out.exists()


def test_unusable_input_through_the_installed_command(tmp_path):
    """The real console script: exit 2 and one error line on stderr, no traceback."""
    dataset = tmp_path / "d.jsonl"
    dataset.write_bytes(_binary())
    completions = write_jsonl(tmp_path / "c.jsonl", [{"index": "t0", "responses": [SUM_OK]}])
    arbiter = Path(sys.executable).parent / "arbiter"
    done = subprocess.run([str(arbiter), "score", "--dataset", str(dataset), "--completions", str(completions),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **WIDE})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert f"--dataset: {dataset} line 1: not UTF-8 text" in _flat(done.stderr)


def test_records_naming_no_row_are_listed_with_their_line_before_scoring(tmp_path):
    dataset = write_parquet(tmp_path / "d.parquet", [row("code_taco", "t0", SUM)])
    completions = write_jsonl(tmp_path / "c.jsonl", [
        {"index": "t0", "responses": [SUM_OK]},
        {"index": "t7", "responses": [SUM_OK]},      # line 2: no such index
        {"row": 5, "responses": [SUM_OK]},           # line 3: no such position
        "",                                          # line 4: blank, ignored
        {"key": "code_taco:zz", "responses": [SUM_OK]},  # line 5: no such key
    ])
    out = tmp_path / "out"
    result = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions),
                                 "--out", str(out)], env=WIDE)  # not --quiet: the bar is drawn
    assert result.exit_code == 0, result.output
    text = _flat(result.output)
    expected = ["c.jsonl line 2: index 't7' matches no dataset row",
                "c.jsonl line 3: row 5 is outside the dataset (0..0)",
                "c.jsonl line 5: row key 'code_taco:zz' is not in the dataset"]
    assert "3 input record(s) skipped" in text
    for message in expected:
        assert message in text
        assert text.index(message) < text.index("scoring")  # listed before the bar, not over it
    errors = read_jsonl(out / "errors.jsonl")
    assert [(e["kind"], e["line"]) for e in errors] == [("completions", 2), ("completions", 3), ("completions", 5)]
    assert [e["message"] for e in errors] == expected
    assert [v["key"] for v in read_jsonl(out / "verdicts.jsonl")] == ["code_taco:t0#0"]


def test_a_refused_rerun_lists_no_skipped_records(tmp_path):
    """A rerun with other options is refused and writes nothing: the records it would skip are not
    listed as "listed in errors.jsonl" (the new user's trial of December 2026: listed, then refused)."""
    dataset = write_parquet(tmp_path / "d.parquet", [row("code_taco", "t0", SUM)])
    completions = write_jsonl(tmp_path / "c.jsonl", [{"index": "t0", "responses": [SUM_OK]},
                                                     {"index": "t7", "responses": [SUM_OK]}])
    out = tmp_path / "out"
    args = ["score", "--dataset", str(dataset), "--completions", str(completions), "--out", str(out)]
    first = runner.invoke(app, args, env=WIDE)
    assert first.exit_code == 0, first.output
    assert "1 input record(s) skipped" in _flat(first.output)
    errors_before = (out / "errors.jsonl").read_bytes()
    again = runner.invoke(app, args + ["--time-limit", "3"], env=WIDE)
    assert again.exit_code == 2, again.output
    text = _flat(again.output)
    assert "time_limit" in text and "skipped" not in text and "t7" not in text
    assert (out / "errors.jsonl").read_bytes() == errors_before


def test_responses_to_a_row_whose_key_repeats_are_not_judged_on_the_first_rows_tests(tmp_path):
    """Row 1 repeats row 0's key, so it is not scored; responses addressed to it by position were once
    judged on row 0's tests as more responses of row 0 (the audit of December 2026: pass@2 1.0 for a
    problem with one response). Now they are a completions problem naming the line."""
    other = {"inputs": ["2 3\n"], "outputs": ["6\n"]}  # a product: row 0's program is wrong on it
    dataset = write_jsonl(tmp_path / "d.jsonl", [row("code_taco", "t0", SUM), row("code_taco", "t0", other)])
    completions = write_jsonl(tmp_path / "c.jsonl", [{"row": 0, "responses": [SUM_OK]},
                                                     {"row": 1, "responses": [SUM_OK]}])
    out = tmp_path / "out"
    result = _score(dataset, completions, out)
    assert result.exit_code == 0, result.output
    assert [(v["key"], v["score"]) for v in read_jsonl(out / "verdicts.jsonl")] == [("code_taco:t0#0", 1.0)]
    errors = read_jsonl(out / "errors.jsonl")
    assert [(e["kind"], e.get("line"), e.get("position")) for e in errors] == [("dataset", None, 1),
                                                                             ("completions", 2, None)]
    assert "row 1 repeats the key 'code_taco:t0'" in errors[1]["message"]
    summary = json.loads((out / "summary.json").read_text())["overall"]
    assert (summary["responses"], summary["correct"]) == (1, 1)


def test_a_dataset_line_that_is_not_json_is_one_bad_row_not_the_end_of_the_run(tmp_path):
    """One torn line in --dataset stopped `arbiter score` before anything was judged (exit 2; curate
    reports the same line as one bad row and goes on; red team, pipelines). It is a dataset problem
    naming the file and line now; the other rows are scored, a response addressed to it by position
    is a completions problem."""
    lines = [json.dumps(row("code_taco", f"b{i}", SUM)).encode() for i in range(5)]
    lines[2] = lines[2][:-5]
    lines[4] = b"\xff\xfe{}"  # (not UTF-8 text: the same)
    dataset = tmp_path / "d.jsonl"
    dataset.write_bytes(b"\n".join(lines) + b"\n")
    completions = write_jsonl(tmp_path / "c.jsonl", [{"index": f"b{i}", "responses": [SUM_OK]} for i in (0, 1, 3)]
                              + [{"row": 2, "responses": [SUM_OK]}])
    out = tmp_path / "out"
    result = _score(dataset, completions, out)
    assert result.exit_code == 0, result.output
    assert [v["key"] for v in read_jsonl(out / "verdicts.jsonl")] == [f"code_taco:b{i}#0" for i in (0, 1, 3)]
    errors = read_jsonl(out / "errors.jsonl")
    assert [(e["kind"], e.get("position"), e.get("line")) for e in errors] == [
        ("dataset", 2, None), ("dataset", 4, None), ("completions", None, 4)]
    assert "d.jsonl line 3: not valid JSON" in errors[0]["message"] and "not scored" in errors[0]["message"]
    assert "d.jsonl line 5: not UTF-8 text" in errors[1]["message"]
    assert "row 2 is not scored" in errors[2]["message"]
    assert json.loads((out / "summary.json").read_text())["overall"]["responses"] == 3


def test_a_row_key_that_is_not_utf8_text_is_reported_and_the_run_finishes(tmp_path):
    """A lone surrogate in extra_info.index (valid JSON: "\\ud800") reached the summary, which could not
    write it: every response judged, then no problems.jsonl or summary.json, every rerun the same;
    --shard crashed at once (red team, pipelines). The row is a dataset problem now (its key written
    escaped); the rest is scored and summed, sharded or not."""
    rows = [row("code_taco", index, SUM) for index in ("ok", "bad\ud800", "\udcff")]
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    completions = tmp_path / "c.jsonl"
    completions.write_text("".join(json.dumps({"key": f"code_taco:{r['extra_info']['index']}", "responses": [SUM_OK]})
                                   + "\n" for r in rows))
    for extra in ([], ["--shard", "0/2"], ["--shard", "1/2"]):
        out = tmp_path / ("out" + "".join(extra).replace("/", "-"))
        result = _score(dataset, completions, out, *extra)
        assert result.exit_code == 0, result.output
        errors = read_jsonl(out / "errors.jsonl")
        assert [(e["kind"], e["position"], e["row"]) for e in errors] == [
            ("dataset", 1, "code_taco:bad\\ud800"), ("dataset", 2, "code_taco:\\udcff")]
        assert all("not UTF-8 text" in e["message"] for e in errors)
        assert (out / "summary.json").is_file() and (out / "problems.jsonl").is_file()
    whole = json.loads((tmp_path / "out" / "summary.json").read_text())["overall"]
    assert (whole["problems"], whole["responses"], whole["correct"]) == (1, 1, 1)
    # merge finds the rows the shards reported (escaped there) and refuses no shard as unfinished
    merged = runner.invoke(app, ["merge", str(tmp_path / "merged"), str(tmp_path / "out--shard0-2"),
                                 str(tmp_path / "out--shard1-2")])
    assert merged.exit_code == 0, merged.output
    assert json.loads((tmp_path / "merged" / "summary.json").read_text())["overall"] == whole


# ------------------------------------------------------------------ vacuous suites


def test_vacuous_rows_are_judged_flagged_and_counted(tmp_path):
    vacuous = {"inputs": ["1\n", "2\n"], "outputs": ["", "\n"]}
    one_empty = {"inputs": ["0\n", "2\n"], "outputs": ["", "4\n"]}  # a legitimate empty answer
    dataset = write_parquet(tmp_path / "d.parquet", [row("code_taco", "v", vacuous), row("code_taco", "e", one_empty),
                                                      row("code_taco", "s", SUM)])
    nothing = md("pass")
    double = md("n = int(input())\nprint(2 * n if n else '')")
    completions = write_jsonl(tmp_path / "c.jsonl", [{"index": "v", "responses": [nothing, double]},
                                                     {"index": "e", "responses": [nothing, double]},
                                                     {"index": "s", "responses": [nothing, SUM_OK]}])
    out = tmp_path / "out"
    result = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions),
                                 "--out", str(out), "--quiet"], env=WIDE)
    assert result.exit_code == 0, result.output
    verdicts = {v["key"]: v for v in read_jsonl(out / "verdicts.jsonl")}
    # judged as usual: the empty program passes the vacuous row (that is the hole being flagged)
    assert [verdicts[f"code_taco:v#{i}"]["verdict"] for i in range(2)] == ["AC", "WA"]
    assert all(verdicts[f"code_taco:v#{i}"]["warning"].startswith("vacuous test suite") for i in range(2))
    assert [verdicts[f"code_taco:e#{i}"]["verdict"] for i in range(2)] == ["WA", "AC"]
    assert all(verdicts[k]["warning"] == "" for k in verdicts if not k.startswith("code_taco:v#"))
    problems = {p["row_key"]: p for p in read_jsonl(out / "problems.jsonl")}
    assert [problems[k]["vacuous"] for k in ("code_taco:v", "code_taco:e", "code_taco:s")] == [True, False, False]
    assert problems["code_taco:v"]["pass_rate"] == 0.5 and not problems["code_taco:v"]["invalid"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["vacuous_problems"] == 1 and summary["overall"]["problems"] == 3
    assert summary["by_data_source"]["code_taco"]["vacuous_problems"] == 1
    assert summary["vacuous_row_keys"] == ["code_taco:v"]
    text = _flat(result.output)
    assert "1 problem(s) have a vacuous test suite" in text and "code_taco:v" in text
    assert "vacuous" in result.output.split("overall")[0]  # the table's column


def test_score_takes_tolerances_on_the_command_line(tmp_path):
    """``--abs-tol``/``--rel-tol`` as docs/codegen.md lists them among ``arbiter score``'s options (a new user
    found them missing, December 2026): they decide the verdict and are recorded in config.json."""
    dataset = write_jsonl(tmp_path / "d.jsonl", [row("code_taco", "f", {"inputs": ["\n"], "outputs": ["0.5\n"]})])
    completions = write_jsonl(tmp_path / "c.jsonl", [{"index": "f", "responses": [md("print(0.55)")]}])
    scores = {}
    for name, extra in (("strict", ("--abs-tol", "0.01")), ("loose", ("--abs-tol", "0.1")),
                        ("rel", ("--abs-tol", "0", "--rel-tol", "0.2"))):
        result = _score(dataset, completions, tmp_path / name, "--checker", "tokens_float", *extra)
        assert result.exit_code == 0, result.output
        (verdict,) = read_jsonl(tmp_path / name / "verdicts.jsonl")
        scores[name] = verdict["score"]
        options = json.loads((tmp_path / name / "config.json").read_text())["options"]
        assert options["abs_tol"] == float(extra[1]), options
    assert scores == {"strict": 0.0, "loose": 1.0, "rel": 1.0}
    refused = _score(dataset, completions, tmp_path / "bad", "--abs-tol", "-1")
    assert refused.exit_code == 2 and "abs_tol must be a finite number >= 0" in _flat(refused.output)


def test_the_table_says_when_a_pass_at_k_leaves_out_problems_with_fewer_responses(tmp_path):
    """pass@4 over one problem of two (the other has one response) was printed without a word (a new user,
    December 2026); summary.json's ``problems_at_k`` had it. Now the table's caption says it."""
    dataset = write_jsonl(tmp_path / "d.jsonl", [row("code_taco", "a", SUM), row("code_taco", "b", SUM)])
    completions = write_jsonl(tmp_path / "c.jsonl", [{"index": "a", "responses": [SUM_OK, SUM_WRONG] * 2},
                                                     {"index": "b", "responses": [SUM_WRONG]}])
    result = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(completions),
                                 "--out", str(tmp_path / "out"), "--quiet"], env=WIDE)
    assert result.exit_code == 0, result.output
    overall = json.loads((tmp_path / "out" / "summary.json").read_text())["overall"]
    assert overall["problems_at_k"] == {"1": 2, "2": 1, "3": 1, "4": 1}
    assert "pass@k is over the problems with at least k responses: pass@2 over 1, pass@4 over 1 of 2" \
        in _flat(result.output)
    even = write_jsonl(tmp_path / "c2.jsonl", [{"index": key, "responses": [SUM_OK, SUM_WRONG] * 2} for key in "ab"])
    full = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(even),
                               "--out", str(tmp_path / "out2"), "--quiet"], env=WIDE)
    assert full.exit_code == 0 and "pass@4" in full.output and "at least k responses" not in full.output


def test_progress_counts_the_responses_of_rows_that_cannot_be_read(tmp_path):
    """The bar ended at 18/19 when a row could not be read (a new user's trial): its responses are never judged,
    but they are done."""
    good = row("code_taco", "g", SUM)
    broken = {"data_source": "code_taco", "prompt": [], "extra_info": {"index": "b"}}  # no reward_model, last
    dataset = write_jsonl(tmp_path / "d.jsonl", [good, broken])
    completions = write_jsonl(tmp_path / "c.jsonl", [{"index": "g", "responses": [SUM_OK, SUM_WRONG]},
                                                     {"index": "b", "responses": [SUM_OK, SUM_OK, SUM_OK]}])
    seen: list[tuple[int, int]] = []
    run = score_completions(dataset, completions, tmp_path / "out",
                            progress=lambda done, total: seen.append((done, total)))
    assert run.responses == 5 and run.judged == 2, run
    assert seen[-1] == (5, 5) and all(done <= total for done, total in seen), seen
