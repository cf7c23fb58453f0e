"""``arbiter oracle verify`` killed with SIGKILL mid-run and restarted finishes with the same outputs as an
uninterrupted run (issue 5, "Bad input"; DESIGN.md "Reliability": resumable by a stable key, no duplicates).

The CLI runs as a real subprocess on the demo data plus bad lines. Run A is killed as soon as its first output
rows appear, a torn half line is appended to one of its outputs (what a kill during a write leaves), and A is
rerun to completion. Run B is one uninterrupted run in another folder. The sets of output rows must be equal,
byte for byte per row (canonical JSON) once the wall-clock fields are removed (``timing``, and the card's
``verification.runtime_ms``, which is measured CPU time).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data/oracle"
ARBITER = [sys.executable, "-m", "arbiter.cli.main"]
FILES = ("sft.jsonl", "verified.jsonl", "rejected.jsonl", "best.jsonl")


def _args(returns: Path, out: Path, cache: Path) -> list[str]:
    return [*ARBITER, "oracle", "verify", "--seeds", str(DATA / "seeds.jsonl"), "--returns", str(returns),
            "--hidden", str(DATA / "hidden_tests.json"), "--generators", str(DATA / "generators"),
            "--out", str(out), "--cache-dir", str(cache), "--gen-plan", "0:2,1:2,2:2", "--no-progress"]


def _lines(path: Path) -> list[str]:
    return [l for l in path.read_text(encoding="utf-8").splitlines() if l.strip()] if path.exists() else []


def _normal(line: str) -> str:
    rec = json.loads(line)
    rec.pop("timing", None)
    if isinstance(rec.get("verification"), dict):
        rec["verification"].pop("runtime_ms", None)
    return json.dumps(rec, sort_keys=True, ensure_ascii=False)


def _decided(out: Path) -> int:
    return sum(len(_lines(out / f)) for f in ("verified.jsonl", "rejected.jsonl"))


def test_sigkill_then_rerun_equals_uninterrupted_run(tmp_path):
    returns = tmp_path / "returns.jsonl"
    returns.write_bytes((DATA / "returns.jsonl").read_bytes() + b'{"task_id": "torn\n' + b"\xff\xfe junk\n")
    total = 33
    cache = tmp_path / "cache"  # fresh: run A also builds the generated suites and measures the sources
    env = dict(os.environ, COLUMNS="200")
    a, b = tmp_path / "A", tmp_path / "B"

    proc = subprocess.Popen(_args(returns, a, cache), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, env=env, cwd=REPO)
    try:
        deadline = time.monotonic() + 300
        while _decided(a) < 2:
            assert proc.poll() is None, f"run A ended before it could be killed: {proc.stderr.read()[-2000:]!r}"
            assert time.monotonic() < deadline, "run A wrote nothing in 300 s"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and every sandbox it started
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    killed_at = _decided(a)
    assert 2 <= killed_at < total, killed_at
    assert not (a / "report.json").exists()
    with (a / "verified.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"key": "dummy_pie_cpp_0001_sum_even:torn", "verif')  # a torn last line

    done = subprocess.run(_args(returns, a, cache), capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "oracle verification" in done.stdout and "summary" in done.stdout
    report_a = json.loads((a / "report.json").read_text())
    assert report_a["run"]["skipped_existing"] >= killed_at - 1

    full = subprocess.run(_args(returns, b, cache), capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    assert full.returncode == 0, full.stdout[-3000:] + full.stderr[-3000:]
    report_b = json.loads((b / "report.json").read_text())

    for name in FILES:
        la, lb = _lines(a / name), _lines(b / name)
        keys = [json.loads(l).get("key") for l in la]
        if name in ("verified.jsonl", "rejected.jsonl"):
            assert len(keys) == len(set(keys)), f"{name}: duplicated rows after resume"
        assert sorted(map(_normal, la)) == sorted(map(_normal, lb)), name
    assert report_a["counts"] == report_b["counts"] and report_a["counts"]["rows"] == total
    assert report_a["by_reason"] == report_b["by_reason"]
    assert [(r["line"], r["outcome"], r["codes"]) for r in report_a["rows"]] == \
        [(r["line"], r["outcome"], r["codes"]) for r in report_b["rows"]]
    assert report_a["counts"]["accepted"] == 7


def test_sft_holds_exactly_the_verified_rows_after_a_kill_between_the_two_writes(tmp_path):
    """sft.jsonl was written before verified.jsonl: a kill between them left an SFT row whose row was decided
    again on the rerun, and when that decision was a rejection (a flaky or time-dependent answer) the rejected
    answer stayed training data (red team, oracle: accepted 0, sft_rows 1). verified.jsonl is written first
    now, and the repair drops an SFT row without its verified row and writes a verified row's missing one."""
    from arbiter.pipelines.oracle.records import sft_key
    from arbiter.pipelines.oracle.verify import _Sinks
    from arbiter.pipelines.runs import RunFolder

    def sft(task: str, answer: str) -> dict:
        return {"task_id": task, "messages": [{"role": "user", "content": task}, {"role": "assistant", "content": answer}]}

    kept, stale, missing = sft("t1", "a"), sft("t2", "b"), sft("t3", "c")
    out = tmp_path / "out"
    out.mkdir()
    (out / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (kept, stale)))
    (out / "verified.jsonl").write_text("".join(json.dumps({"key": sft_key(r), **r}) + "\n" for r in (kept, missing)))
    sinks = _Sinks(RunFolder(out))
    sinks.repair_sft()
    sinks.sft.close()
    assert [json.loads(l)["task_id"] for l in _lines(out / "sft.jsonl")] == ["t1", "t3"]
    assert set(sinks.sft.keys) == {sft_key(kept), sft_key(missing)}
