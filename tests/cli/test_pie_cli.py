"""``arbiter pie reward`` and ``arbiter pie eval`` as real subprocesses, on real C++ programs (the divisor-sum
problem of ``test_pie_retime.py``) in a PIE-layout tests folder, with a val.jsonl-style rows file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arbiter.datasets.io import read_jsonl
from arbiter.timing.instructions import valgrind_available

from test_pie_retime import FAST, NOT_CPP, SLOW, WRONG, write_problem  # noqa: E402

pytestmark = pytest.mark.skipif(not valgrind_available(), reason="valgrind is not installed")

REPO = Path(__file__).resolve().parents[2]
ARBITER = [sys.executable, "-m", "arbiter.cli.main", "pie"]
P = "p09101"


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*ARBITER, *args], capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env=dict(os.environ, COLUMNS="200"))


def jl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("pie_cli")
    tests = write_problem(root / "tests", P, [400_000, 10, 77_777])
    # val.jsonl-style rows; one source, two targets (a src_id alone is enough: both rows agree on the source)
    base = {"problem_id": P, "src_id": "s1", "src_code": SLOW, "speedup": "3.5", "src_agg_runtime": 0.1}
    rows = jl(root / "rows.jsonl", [dict(base, tgt_id="t1", tgt_code=FAST, tgt_agg_runtime=0.03),
                                    dict(base, tgt_id="t2", tgt_code=FAST, tgt_agg_runtime=0.02),
                                    {"problem_id": P, "src_id": "broken"}])
    cands = jl(root / "cands.jsonl", [{"src_id": "s1", "candidates": [FAST, WRONG, NOT_CPP]},
                                      {"row": f"{P}/s1/t2", "id": "mine", "code": SLOW},
                                      {"src_id": "nope", "code": FAST},
                                      "{not json"])
    return {"root": root, "tests": tests, "rows": rows, "cands": cands}


def test_reward_scores_every_candidate_writes_records_and_resumes(data):
    out = data["root"] / "out"
    args = ["reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates", str(data["cands"]),
            "--out", str(out), "--no-progress"]
    r = cli(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PIE re-timed reward" in r.stdout and "toolchain fingerprint" in r.stdout
    assert "bad row" in r.stdout  # the rows file's unusable row is named, the batch goes on
    recs = list(read_jsonl(out / "rewards.jsonl"))
    assert [(x["line"], x["index"], x["outcome"]) for x in recs] == [
        (1, 0, "AC"), (1, 1, "WA"), (1, 2, "CE"), (2, 0, "AC"), (3, 0, "INVALID_TASK"), (4, 0, "INVALID_TASK")]
    fast, wrong, ce, same, missing, bad_json = recs
    assert fast["speedup"] > 1 and fast["reward"] == fast["speedup"] and fast["src_id"] == "s1"
    assert fast["cases"] == ["input.0", "input.1", "input.2"] and fast["startup_floor"] > 0
    assert wrong["reward"] == 0.0 and ce["reward"] == 0.0 and wrong["speedup"] is None
    assert same["speedup"] == 1.0 and same["tgt_id"] == "t2" and same["key"].startswith("mine#0:")
    assert same["src_cache_hits"] == 3  # the source was measured once, for the first candidate
    assert missing["reward"] is None and "nope" in missing["reason"]
    assert bad_json["reward"] is None and "line 4" in bad_json["reason"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["by_outcome"] == {"AC": 2, "CE": 1, "INVALID_TASK": 2, "WA": 1}
    assert (summary["n_scored"], summary["n_correct"], summary["new"], summary["resumed"]) == (4, 2, 6, 0)
    assert summary["pct_correct"] == 50.0 and summary["pct_opt"] == 25.0 and summary["row_errors"] == 1
    # rerun: nothing re-scored, nothing duplicated
    again = cli(*args)
    assert again.returncode == 0
    assert len(list(read_jsonl(out / "rewards.jsonl"))) == 6
    assert json.loads((out / "summary.json").read_text())["resumed"] == 6
    # an interrupted run (last record lost, a torn line left) resumes to the same six records
    lines = (out / "rewards.jsonl").read_text().splitlines(keepends=True)
    (out / "rewards.jsonl").write_text("".join(lines[:-3]) + lines[-3][:40])
    third = cli(*args)
    assert third.returncode == 0
    after = list(read_jsonl(out / "rewards.jsonl"))
    assert sorted(x["key"] for x in after) == sorted(x["key"] for x in recs)
    assert json.loads((out / "summary.json").read_text())["new"] == 3


def test_reward_transform_and_k_sampling_shared_per_source(data):
    out = data["root"] / "out_k"
    r = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates", str(data["cands"]),
            "--out", str(out), "--transform", "log", "--k", "1", "--seed", "3", "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    recs = [x for x in read_jsonl(out / "rewards.jsonl") if x["outcome"] in ("AC", "WA")]
    assert {x["transform"] for x in recs} == {"log"} and all(x["k"] == 1 for x in recs)
    assert all(len(x["cases"]) == 1 for x in recs)
    assert len({tuple(x["cases"]) for x in recs}) == 1  # every candidate of the source is timed on the same case
    ac = [x for x in recs if x["outcome"] == "AC"]
    assert any(x["reward"] == pytest.approx(0.0) for x in ac)  # SLOW against itself: log(1) = 0


def test_reward_pie_floor_mean_says_how_failures_enter_it(data):
    """pie_floor counts a failed candidate as 1.0 (PIE's gem5_eval.py): the summary's mean reward says so and
    gives the mean over the correct candidates beside it (it read as a mean speedup of everything)."""
    out = data["root"] / "out_floor"
    r = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates", str(data["cands"]),
            "--out", str(out), "--transform", "pie_floor", "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    recs = [x for x in read_jsonl(out / "rewards.jsonl") if x["reward"] is not None]
    ac, failed = [x for x in recs if x["outcome"] == "AC"], [x for x in recs if x["outcome"] != "AC"]
    assert len(ac) == 2 and sorted(x["outcome"] for x in failed) == ["CE", "WA"]
    assert all(x["reward"] == 1.0 for x in failed)
    s = json.loads((out / "summary.json").read_text())
    assert s["mean_reward"] == pytest.approx(sum(x["reward"] for x in recs) / 4)
    assert (s["n_failed_scored"], s["failure_rewards"]) == (2, [1.0])
    assert s["mean_reward_correct"] == pytest.approx(sum(x["reward"] for x in ac) / 2)
    assert "of scored; 2 failed candidates in it at 1 each" in r.stdout
    assert "mean reward of the correct (AC) only (2)" in r.stdout


def test_reward_bad_arguments_exit_2(data):
    base = ["reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--out", str(data["root"] / "x")]
    r = cli(*base, "--candidates", str(data["root"] / "missing.jsonl"))
    assert r.returncode == 2 and "not found" in r.stdout
    r = cli(*base, "--candidates", str(data["cands"]), "--k", "0")
    assert r.returncode == 2 and "K" in r.stdout
    r = cli(*base, "--candidates", str(data["cands"]), "--transform", "clipped", "--param", "lo=3", "--param", "hi=1")
    assert r.returncode == 2 and "lo" in r.stdout


def test_eval_pie_metrics_with_measured_and_precomputed_programs(data):
    gens = jl(data["root"] / "gens.jsonl", [{"src_id": "s1", "generations": [WRONG, FAST]},
                                            {"id": "gem5", "src_runtime": 10.0, "runtimes": [None, 4.0]}])
    out = data["root"] / "eval"
    r = cli("eval", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--generations", str(gens),
            "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "best@k" in r.stdout and "%Opt" in r.stdout
    rep = json.loads((out / "metrics.json").read_text())
    gen = list(read_jsonl(out / "generations.jsonl"))
    assert [g["outcome"] for g in gen] == ["WA", "AC"]
    s = gen[1]["speedup"]
    assert s > 1.1
    # by hand: program 1 = [fail, s] -> best@1 floors to 1.0, best@2 = s; program "gem5" = [fail, 10/4 = 2.5]
    m1, m2 = rep["metrics"]
    assert (m1["k"], m1["pct_correct"], m1["pct_opt"], m1["mean_speedup"]) == (1, 0.0, 0.0, 1.0)
    assert (m2["k"], m2["pct_correct"], m2["pct_opt"]) == (2, 100.0, 100.0)
    assert m2["mean_speedup"] == pytest.approx((s + 2.5) / 2)
    assert rep["n_programs"] == 2 and rep["n_excluded"] == 0 and rep["method"] == "cycles"  # the default
    per = {p["id"]: p for p in rep["per_program"]}
    assert per[f"{P}/s1/t1@1"]["runtimes"][0] is None
    assert per[f"{P}/s1/t1@1"]["src_runtime"] == gen[1]["src_total"]


def test_eval_precomputed_only_needs_no_rows_or_tests(data):
    gens = jl(data["root"] / "pre.jsonl", [{"id": "a", "src_runtime": 6.0, "runtimes": [3.0, None, 1.0]},
                                           {"id": "b", "src_runtime": 2.0, "runtimes": [None, None, None]}])
    out = data["root"] / "eval_pre"
    r = cli("eval", "--generations", str(gens), "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((out / "metrics.json").read_text())
    # a: best@1 = 3 -> 2.0, best@3 = 1 -> 6.0; b never correct -> 1.0
    assert [m["mean_speedup"] for m in rep["metrics"]] == [pytest.approx(1.5), pytest.approx(1.5), pytest.approx(3.5)]
    assert [m["pct_correct"] for m in rep["metrics"]] == [50.0, 50.0, 50.0]
    assert rep["method"] == "precomputed"


def test_reward_resume_into_a_folder_of_other_options_is_refused(data):
    """Keys hold the candidate's hash, not the options: rerunning into the same --out with another transform or
    checker (or other rows) must be refused (exit 2, naming what differs), never resume with the old rewards."""
    cands = jl(data["root"] / "one.jsonl", [{"src_id": "s1", "code": FAST}])
    out = data["root"] / "out_cfg"
    base = ["reward", "--tests", str(data["tests"]), "--candidates", str(cands), "--out", str(out), "--no-progress"]
    first = cli(*base, "--rows", str(data["rows"]))
    assert first.returncode == 0, first.stdout + first.stderr
    for extra, named in ((["--transform", "log"], "option transform ('raw' -> 'log')"),
                         (["--checker", "exact"], "option checker"),
                         (["--k", "1"], "option k (-1 -> 1)"),
                         (["--method", "instructions"], "option method ('cycles' -> 'instructions')"),
                         (["--cpu-seconds", "5"], "option limits")):
        r = cli(*base, "--rows", str(data["rows"]), *extra)
        text = " ".join(r.stdout.split())
        assert r.returncode == 2 and named in text and "use another --out folder" in text, (extra, r.stdout)
    other_rows = jl(data["root"] / "rows2.jsonl", [json.loads(l) for l in data["rows"].read_text().splitlines()][:2])
    r = cli(*base, "--rows", str(other_rows))
    assert r.returncode == 2 and "changed: rows" in " ".join(r.stdout.split()), r.stdout
    assert [x["transform"] for x in read_jsonl(out / "rewards.jsonl")] == ["raw"]  # nothing was rescored
    same = cli(*base, "--rows", str(data["rows"]))
    assert same.returncode == 0 and json.loads((out / "summary.json").read_text())["resumed"] == 1
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["options"]["transform"] == "raw" and cfg["rows"]["file_sha256"] and cfg["tests"]["files"] == 6
    # the default measure and its cycle model are part of the run's identity (another model: another folder)
    from arbiter.timing.cycles import DEFAULT_MODEL

    assert cfg["options"]["method"] == "cycles" and cfg["options"]["cycle_model"] == DEFAULT_MODEL.identity()


def test_reward_and_eval_out_pointing_to_a_file_exit_2(data):
    target = data["root"] / "a_file"
    target.write_text("x")
    r = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates", str(data["cands"]),
            "--out", str(target), "--no-progress")
    assert r.returncode == 2 and "exists and is not a folder" in " ".join(r.stdout.split()), r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    gens = jl(data["root"] / "pre_only.jsonl", [{"id": "a", "src_runtime": 2.0, "runtimes": [1.0]}])
    e = cli("eval", "--generations", str(gens), "--out", str(target), "--no-progress")
    assert e.returncode == 2 and "exists and is not a folder" in " ".join(e.stdout.split()), e.stdout + e.stderr
    assert "Traceback" not in e.stderr and target.read_text() == "x"


def test_program_fields_are_typed_and_unscored_records_report_the_requested_method(data):
    """``candidates`` must be a list (a string there is bad input naming the line and field, not one program);
    ``code`` must be one string. Records that were never measured report the method asked for (--method wall)."""
    cands = jl(data["root"] / "typed.jsonl", [{"src_id": "s1", "candidates": FAST},
                                              {"src_id": "s1", "code": [FAST]},
                                              {"src_id": "nope", "code": FAST}])
    out = data["root"] / "out_typed"
    r = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates", str(cands),
            "--out", str(out), "--method", "wall", "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    recs = list(read_jsonl(out / "rewards.jsonl"))
    assert [x["outcome"] for x in recs] == ["INVALID_TASK"] * 3 and all(x["reward"] is None for x in recs)
    assert recs[0]["reason"].startswith("line 1: field 'candidates' must be a list of programs, got str")
    assert recs[1]["reason"].startswith("line 2: field 'code' must be one program (a string), got list")
    assert {(x["method"], x["unit"], x["requested_method"]) for x in recs} == {("wall", "seconds", "wall")}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["methods"] == ["wall"] and summary["requested_methods"] == ["wall"]


# ------------------------------------------------------------------------------------- bad options and bad bytes


def test_reward_and_eval_bad_options_and_paths_exit_2_naming_them(data):
    """Every bad option or input path is refused before anything is read or written: exit 2, one line naming the
    option (and the path), no traceback, no --out folder created."""
    root = data["root"]
    out = root / "never_created"
    ok = {"--rows": str(data["rows"]), "--tests": str(data["tests"]), "--candidates": str(data["cands"]),
          "--out": str(out)}
    cases = [
        ({"--transform": "bogus"}, "--transform"),
        ({"--k": "0"}, "--k must be -1"),
        ({"--k": "-5"}, "--k must be -1"),
        ({"--repeats": "0"}, "--repeats must be from 1"),
        ({"--repeats": "-3"}, "--repeats must be from 1"),
        ({"--cpu-seconds": "nan"}, "--cpu-seconds must be a number of seconds in (0, 86400]"),
        ({"--cpu-seconds": "1e12"}, "--cpu-seconds must be a number of seconds in (0, 86400]"),
        ({"--memory-mib": "0"}, "--memory-mib must be a positive"),
        ({"--rows": str(root / "no_rows.jsonl")}, f"--rows {root / 'no_rows.jsonl'}: not found"),
        ({"--tests": str(root / "no_tests")}, f"--tests {root / 'no_tests'}: not found"),
        ({"--candidates": str(root / "no_cands.jsonl")}, f"--candidates {root / 'no_cands.jsonl'}: not found"),
        ({"--candidates": str(data["tests"])}, f"--candidates {data['tests']}: is a folder"),
    ]
    for change, message in cases:
        args = dict(ok, **change)
        r = cli("reward", *[x for kv in args.items() for x in kv], "--no-progress")
        text = " ".join(r.stdout.split()) + " " + " ".join(r.stderr.split())
        assert r.returncode == 2 and message in text, (change, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and not out.exists(), change
    gens = jl(root / "gens_ok.jsonl", [{"src_id": "s1", "generations": [FAST]}])
    ok_eval = {"--rows": str(data["rows"]), "--tests": str(data["tests"]), "--generations": str(gens),
               "--out": str(out)}
    for change, message in [({"--k": "-7"}, "--k must be -1"), ({"--repeats": "0"}, "--repeats must be from 1"),
                            ({"--generations": str(root / "no_gens.jsonl")}, "--generations"),
                            ({"--tests": str(root / "no_tests")}, "--tests")]:
        args = dict(ok_eval, **change)
        r = cli("eval", *[x for kv in args.items() for x in kv], "--no-progress")
        text = " ".join(r.stdout.split())
        assert r.returncode == 2 and message in text, (change, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and not out.exists(), change


def test_non_utf8_lines_in_rows_candidates_and_generations_are_rejected_alone(data):
    """A line with bytes that are not UTF-8 in the rows file, the candidates file or the generations file is one
    rejected row, named with its file and line; the other rows are scored as usual (exit 0)."""
    root = data["root"]
    good_row = json.loads(data["rows"].read_text().splitlines()[0])
    rows = root / "rows_latin1.jsonl"
    rows.write_bytes(json.dumps(good_row).encode() + b"\n"
                     + b'{"problem_id": "p09101", "src_id": "s\xe9", "src_code": "int main(){}"}\n')
    cands = root / "cands_latin1.jsonl"
    cands.write_bytes(b'{"src_id": "s1", "code": "int main() { /* caf\xe9 */ }"}\n'
                      + json.dumps({"src_id": "s1", "code": FAST}).encode() + b"\n")
    out = root / "out_latin1"
    r = cli("reward", "--rows", str(rows), "--tests", str(data["tests"]), "--candidates", str(cands),
            "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    text = " ".join(r.stdout.split())
    assert "bad row in --rows:" in text and "rows_latin1.jsonl: line 2 is not UTF-8 text (byte 0xe9" in text
    assert "bad record in --candidates: line 1 of cands_latin1.jsonl: not UTF-8 text (byte 0xe9" in text
    recs = list(read_jsonl(out / "rewards.jsonl"))
    assert [(x["line"], x["outcome"]) for x in recs] == [(1, "INVALID_TASK"), (2, "AC")]
    assert recs[0]["reward"] is None and recs[0]["reason"].startswith("line 1 of cands_latin1.jsonl: not UTF-8")
    assert recs[1]["speedup"] > 1
    assert json.loads((out / "summary.json").read_text())["row_errors"] == 1
    # eval: a generations line that is not UTF-8 excludes that program only
    gens = root / "gens_latin1.jsonl"
    gens.write_bytes(b'{"id": "a", "src_runtime": 6.0, "runtimes": [3.0]}\n'
                     b'{"id": "b\xff", "src_runtime": 2.0, "runtimes": [1.0]}\n')
    e = cli("eval", "--generations", str(gens), "--out", str(root / "eval_latin1"), "--no-progress")
    assert e.returncode == 0, e.stdout + e.stderr
    rep = json.loads((root / "eval_latin1" / "metrics.json").read_text())
    assert rep["n_programs"] == 1 and rep["excluded"] == [
        {"id": "line 2", "reason": "line 2 of gens_latin1.jsonl: not UTF-8 text (byte 0xff at column 10)"}]
    assert "line 2 of gens_latin1.jsonl" in " ".join(e.stdout.split())


def _has_avx512() -> bool:
    try:
        flags = next(line for line in open("/proc/cpuinfo", encoding="utf-8") if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return False
    return {"avx512f", "avx512bw", "avx512vl"} <= set(flags)


@pytest.mark.skipif(not _has_avx512(), reason="this CPU lacks avx512f/avx512bw/avx512vl")
def test_summaries_name_the_unit_and_flag_fallback_rows(data):
    """An AVX-512 candidate is measured in wall/CPU seconds (valgrind cannot run it), an ordinary one in
    cycles (the default): the reward summary keeps the two apart and flags the seconds, the eval report and table flag the
    program measured in another unit."""
    from test_pie_retime import FAST_AVX512

    root = data["root"]
    cands = jl(root / "cands_units.jsonl", [{"src_id": "s1", "candidates": [FAST, FAST_AVX512]}])
    out = root / "out_units"
    r = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates", str(cands),
            "--out", str(out), "--repeats", "3", "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    fast, avx = list(read_jsonl(out / "rewards.jsonl"))
    assert (fast["outcome"], fast["unit"], avx["outcome"], avx["unit"]) == ("AC", "cycles", "AC", "seconds")
    s = json.loads((out / "summary.json").read_text())
    kind = s["speedup_unit"]  # cycles of one model: cycles:<model>:<digest>
    assert kind.startswith("cycles:gem5-skylake-se:") and s["speedup_units"] == {kind: 1, "seconds": 1}
    assert s["mean_speedup"] == pytest.approx(fast["speedup"]) and s["n_other_unit"] == 1
    assert s["speedups_by_unit"]["seconds"]["mean"] == pytest.approx(avx["speedup"])
    text = " ".join(r.stdout.split())
    assert f"speedup of correct, in {kind} (1): mean / geomean / median" in text
    assert "speedup of correct, in seconds (1; meter fallback, not in the figures above)" in text
    assert "measured with wall instead: valgrind cannot decode the program's instructions (AVX-512)" in text
    gens = jl(root / "gens_units.jsonl", [{"src_id": "s1", "generations": [FAST]},
                                          {"id": "avx", "src_id": "s1", "generations": [FAST_AVX512]}])
    e = cli("eval", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--generations", str(gens),
            "--out", str(root / "eval_units"), "--repeats", "3", "--no-progress")
    assert e.returncode == 0, e.stdout + e.stderr
    rep = json.loads((root / "eval_units" / "metrics.json").read_text())
    assert rep["unit"] == "cycles" and rep["speedup_units"] == {"cycles": 1, "seconds": 1}
    assert rep["programs_in_other_unit"] == ["avx"]
    per = {p["id"]: p for p in rep["per_program"]}
    assert per["avx"]["units"] == ["seconds"] and per["avx"]["unit"] == "seconds"
    assert per[f"{P}/s1/t1@1"]["units"] == ["cycles"]
    assert "1 program(s) have generations measured in another unit than cycles" in " ".join(e.stdout.split())


# ------------------------------------------------------------------------- inputs unusable as a whole: exit 2


def _text(r: subprocess.CompletedProcess) -> str:
    return " ".join(r.stdout.split()) + " " + " ".join(r.stderr.split())


def test_reward_candidates_file_unusable_as_a_whole_exits_2_before_scoring(data):
    """As ``arbiter score`` does for its completions: a --candidates file that is empty, binary, not JSON Lines, a
    JSON list, or whose every record names an unknown row is refused (exit 2, naming --candidates and the file)
    before anything is scored or written, never exit 0 with a table of INVALID_TASK records."""
    import gzip

    root = data["root"] / "unusable_cands"
    root.mkdir()
    one = json.dumps({"src_id": "s1", "code": FAST})
    files = {
        "empty.jsonl": (b"", "empty (no records)"),
        "blank.jsonl": (b"\n  \n\n", "empty (no records)"),
        "binary.jsonl": (bytes(range(256)) * 8, "not JSON Lines: none of its"),
        "text.jsonl": (b"int main() { return 0; }\nhello\n", "not JSON Lines: none of its 2 non-blank line(s)"),
        "list.jsonl": (("[" + one + "]\n").encode(), "a JSON list: give one object per line"),
        "pretty.json": (json.dumps([{"src_id": "s1", "code": FAST}], indent=2).encode(), "not JSON Lines"),
        "scalars.jsonl": (b"1\n\"s1\"\nnull\n", "not JSON Lines"),
        "gz.jsonl": (gzip.compress((one + "\n").encode()), "gzip-compressed"),
        "unknown.jsonl": ((json.dumps({"src_id": "nope", "code": FAST}) + "\n"
                           + json.dumps({"row": f"{P}/s404", "candidates": [FAST]}) + "\n").encode(),
                          "none of its 2 record(s) names a usable row of --rows"),
    }
    for name, (content, reason) in files.items():
        path = root / name
        path.write_bytes(content)
        out = root / f"out_{name}"
        r = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates", str(path),
                "--out", str(out), "--no-progress")
        text = _text(r)
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert f"error: --candidates {path}:" in text and reason in text, (name, text)
        assert "Traceback" not in r.stderr and not out.exists(), name
    # the unknown-row message quotes the first record's problem
    r = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates",
            str(root / "unknown.jsonl"), "--out", str(root / "out_x"), "--no-progress")
    assert "line 1: field 'src_id': no row with src_id 'nope'" in _text(r)
    # a record naming a row of the rows file that is itself unusable says why that row is (a new user's
    # trial: the message said "no row with src_id" and named no column)
    broken = root / "broken.jsonl"
    broken.write_text(json.dumps({"src_id": "broken", "code": FAST}) + "\n")
    r = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates", str(broken),
            "--out", str(root / "out_b"), "--no-progress")
    text = " ".join(_text(r).split())
    assert r.returncode == 2 and "1 unusable (first: row 2" in text and "'src_code'" in text, text
    assert "the row with src_id 'broken' is unusable" in text and "no row with" not in text, text
    # eval: a generations file of measured lines none of which names a row is refused the same way
    out = root / "eval_unknown"
    e = cli("eval", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--generations",
            str(root / "unknown.jsonl"), "--out", str(out), "--no-progress")
    assert e.returncode == 2 and f"error: --generations {root / 'unknown.jsonl'}:" in _text(e), e.stdout + e.stderr
    assert "names a usable row" in _text(e) and not out.exists()


def test_reward_bad_records_next_to_a_matched_one_stay_per_record(data):
    """One matched record is enough: binary junk, a JSON list and an unknown src_id next to it are INVALID_TASK
    records each (one bad row never stops a batch), exit 0. (No candidate here needs measuring: the matched record's
    program field has the wrong type.)"""
    root = data["root"]
    cands = root / "mixed_bad.jsonl"
    cands.write_bytes(b"\x00\xff\xfe binary \x89PNG\n"
                      + json.dumps([{"src_id": "s1", "code": FAST}]).encode() + b"\n"
                      + json.dumps({"src_id": "nope", "code": FAST}).encode() + b"\n"
                      + json.dumps({"src_id": "s1", "code": [FAST]}).encode() + b"\n")
    out = root / "out_mixed_bad"
    r = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates", str(cands),
            "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    recs = list(read_jsonl(out / "rewards.jsonl"))
    assert [(x["line"], x["outcome"]) for x in recs] == [(1, "INVALID_TASK"), (2, "INVALID_TASK"),
                                                         (3, "INVALID_TASK"), (4, "INVALID_TASK")]
    assert "not UTF-8" in recs[0]["reason"] and "expected a JSON object, got list" in recs[1]["reason"]
    assert "nope" in recs[2]["reason"] and "field 'code' must be one program" in recs[3]["reason"]


def test_reward_and_eval_tests_unusable_as_a_whole_exit_2_before_scoring(data):
    """A --tests archive that is empty, truncated, not a tar or holds no PIE files, or a --tests folder with no
    <problem_id>/input.N.txt (empty, or one problem's own folder), is refused (exit 2 naming --tests and the path)
    before anything is scored, never every candidate INVALID_TASK with exit 0. A good archive passes the check."""
    import io
    import tarfile

    from arbiter.pipelines.pie.inputs import check_tests_source

    root = data["root"] / "unusable_tests"
    root.mkdir()
    good = root / "good.tar.gz"
    with tarfile.open(good, "w:gz") as tf:
        tf.add(data["tests"] / P, arcname=f"./{P}")
    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w") as tf:
        tf.add(data["tests"] / P, arcname=f"./{P}")
    (root / "empty.tar.gz").write_bytes(b"")
    (root / "truncated.tar").write_bytes(plain.getvalue()[:100])
    (root / "text.tar.gz").write_text("not an archive\n")
    other = io.BytesIO()
    with tarfile.open(fileobj=other, mode="w:gz") as tf:
        info = tarfile.TarInfo("./README")
        info.size = 3
        tf.addfile(info, io.BytesIO(b"hi\n"))
    (root / "no_pie.tar.gz").write_bytes(other.getvalue())
    (root / "empty_dir").mkdir()
    (root / "junk_dir" / "sub").mkdir(parents=True)
    (root / "junk_dir" / "sub" / "notes.txt").write_text("x")
    cases = [(root / "empty.tar.gz", "cannot read the archive (empty file)"),
             (root / "truncated.tar", "cannot read the archive (truncated header)"),
             (root / "text.tar.gz", "cannot read the archive"),
             (root / "no_pie.tar.gz", "the archive holds no PIE test files"),
             (root / "empty_dir", "no PIE test folder in it (an empty folder)"),
             (root / "junk_dir", "no PIE test folder in it (no <problem_id>/input.N.txt found)"),
             (data["tests"] / P, "is one problem's test folder")]
    for path, reason in cases:
        out = root / f"out_{path.name}"
        r = cli("reward", "--rows", str(data["rows"]), "--tests", str(path), "--candidates", str(data["cands"]),
                "--out", str(out), "--no-progress")
        text = _text(r)
        assert r.returncode == 2, (path, r.stdout, r.stderr)
        assert f"error: --tests {path}:" in text and reason in text, (path, text)
        assert "Traceback" not in r.stderr and not out.exists(), path
    gens = jl(root / "gens.jsonl", [{"src_id": "s1", "generations": [FAST]}])
    out = root / "eval_out"
    e = cli("eval", "--rows", str(data["rows"]), "--tests", str(root / "empty.tar.gz"), "--generations", str(gens),
            "--out", str(out), "--no-progress")
    assert e.returncode == 2 and "cannot read the archive (empty file)" in _text(e), e.stdout + e.stderr
    assert f"error: --tests {root / 'empty.tar.gz'}:" in _text(e) and not out.exists()
    check_tests_source(good)  # a real archive and a real folder pass
    check_tests_source(data["tests"])


def test_reward_and_eval_refuse_an_unaccepted_compile_command_before_running(data):
    """--compile-command is checked as `arbiter judge` checks it (parse_compile_command): anything but an accepted
    g++/clang++ command is exit 2 with the parser's message naming --compile-command, before anything runs (not
    every candidate SANDBOX_ERROR with exit 3). An accepted command passes and is recorded in config.json."""
    root = data["root"]
    gens = jl(root / "gens_cc.jsonl", [{"src_id": "s1", "generations": [FAST]}])
    for command, reason in (("gcc -O2", "token 'gcc' is not a g++/clang++ compiler"),
                            ("g++ -O2", "names no source file"),
                            ("g++ -O2 -fplugin=evil.so main.cpp", "token '-fplugin=evil.so' is not allowed"),
                            ("g++ -O2 main.cpp; rm -rf /", "not allowed")):
        out = root / "out_cc"
        r = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates",
                str(data["cands"]), "--out", str(out), "--compile-command", command, "--no-progress")
        text = _text(r)
        assert r.returncode == 2, (command, r.stdout, r.stderr)
        assert f"error: --compile-command {command!r}:" in text and reason in text, (command, text)
        assert "Traceback" not in r.stderr and not out.exists(), command
        e = cli("eval", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--generations", str(gens),
                "--out", str(out), "--compile-command", command, "--no-progress")
        assert e.returncode == 2 and f"error: --compile-command {command!r}:" in _text(e), (command, e.stdout)
        assert reason in _text(e) and not out.exists(), command
    # an accepted command is not refused (no candidate here needs compiling: the record's code field is mistyped)
    cands = jl(root / "cands_cc.jsonl", [{"src_id": "s1", "code": [FAST]}])
    out = root / "out_cc_ok"
    ok = cli("reward", "--rows", str(data["rows"]), "--tests", str(data["tests"]), "--candidates", str(cands),
             "--out", str(out), "--compile-command", "g++ -std=gnu++17 -O2 main.cpp", "--no-progress")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads((out / "config.json").read_text())["options"]["compile_command"] == \
        "g++ -std=gnu++17 -O2 main.cpp"


def test_reward_and_eval_count_dataset_defects_apart_from_candidate_failures(data, shared):
    """Real PIE p02753 public tests; one healthy row, one whose target has s065571920's undefined behaviour, one
    whose source has it. The broken rows are DATASET_DEFECT (reward None, outside every figure) and listed by row
    in the summary / metrics.json; a wrong candidate on the healthy row is still its own WA."""
    from test_pie_retime import P02753_ALWAYS_YES, P02753_OK, P02753_UB

    tar = shared / "realdata" / "pie_public_tests" / "public_test_cases.tar.gz"
    if not tar.is_file():
        pytest.skip(f"{tar} not found")
    base = {"problem_id": "p02753", "speedup": "1.5"}
    rows = jl(data["root"] / "p02753_rows.jsonl", [
        dict(base, src_id="s1", tgt_id="t1", src_code=P02753_OK, tgt_code=P02753_OK),
        dict(base, src_id="s2", tgt_id="s065571920", src_code=P02753_OK, tgt_code=P02753_UB),
        dict(base, src_id="s065571920", tgt_id="t3", src_code=P02753_UB, tgt_code=P02753_OK)])
    cands = jl(data["root"] / "p02753_cands.jsonl", [
        {"src_id": "s1", "candidates": [P02753_OK, P02753_ALWAYS_YES]},
        {"src_id": "s2", "candidates": [P02753_OK, P02753_ALWAYS_YES]},
        {"src_id": "s065571920", "code": P02753_OK}])
    out = data["root"] / "p02753_out"
    r = cli("reward", "--rows", str(rows), "--tests", str(tar), "--candidates", str(cands), "--out", str(out),
            "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    recs = list(read_jsonl(out / "rewards.jsonl"))
    assert [(x["src_id"], x["outcome"], x["reward"]) for x in recs] == [
        ("s1", "AC", recs[0]["speedup"]), ("s1", "WA", 0.0), ("s2", "DATASET_DEFECT", None),
        ("s2", "DATASET_DEFECT", None), ("s065571920", "DATASET_DEFECT", None)]
    assert recs[2]["dataset_defects"][0]["program"] == "target"
    assert recs[4]["dataset_defects"][0]["program"] == "source"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["by_outcome"] == {"AC": 1, "DATASET_DEFECT": 3, "WA": 1}
    assert (summary["n_scored"], summary["n_correct"], summary["pct_correct"]) == (2, 1, 50.0)
    assert (summary["n_dataset_defects"], summary["n_dataset_defect_rows"]) == (3, 2)
    assert [(d["row"], d["program"], d["cases"]) for d in summary["dataset_defects"]] == [
        ("p02753/s065571920/t3", "source", ["source input.3 WA"]),
        ("p02753/s2/s065571920", "target", ["target input.3 WA"])]
    assert "2 dataset defect(s)" in r.stdout and "p02753/s2/s065571920" in r.stdout

    gens = jl(data["root"] / "p02753_gens.jsonl", [{"src_id": "s1", "generations": [P02753_ALWAYS_YES, P02753_OK]},
                                                   {"src_id": "s2", "generations": [P02753_OK, P02753_OK]}])
    ev = data["root"] / "p02753_eval"
    e = cli("eval", "--rows", str(rows), "--tests", str(tar), "--generations", str(gens), "--out", str(ev),
            "--no-progress")
    assert e.returncode == 0, e.stdout + e.stderr
    rep = json.loads((ev / "metrics.json").read_text())
    assert (rep["n_programs"], rep["n_excluded"], rep["n_dataset_defects"]) == (1, 0, 1)
    assert [(d["row"], "the target (s065571920) fails 1" in d["reason"]) for d in rep["dataset_defects"]] == [
        ("p02753/s2/s065571920", True)]
    assert [m["pct_correct"] for m in rep["metrics"]] == [0.0, 100.0]  # the healthy program only
    assert "1 dataset defect(s)" in e.stdout


def test_help_names_the_default_measure_and_why():
    """``--help`` of reward and eval says which measure is used by default (cycles) and why."""
    from arbiter.timing.comparison import DEFAULT_METHOD

    for cmd in ("reward", "eval"):
        r = cli(cmd, "--help")
        text = " ".join(r.stdout.replace("│", " ").split())
        assert r.returncode == 0 and DEFAULT_METHOD == "cycles", r.stderr
        assert "cycles (default)" in text and "gem5" in text and "[default: cycles]" in text, text


def test_an_id_names_one_record_a_repeat_is_its_own_invalid_record(data):
    """An ``id`` is its record's key: a second line under the same id once got the first line's results (another
    row's, measured on other tests) and was not written at all (the audit of December 2026: a wrong program AC at
    16.6x, rows lost). Now the repeat is one INVALID_TASK record naming both lines; the first is scored as usual."""
    root = data["root"]
    for cmd, field, name in (("reward", "candidates", "rewards.jsonl"), ("eval", "generations", "generations.jsonl")):
        lines = jl(root / f"same_id_{cmd}.jsonl", [{"src_id": "s1", "id": "x", field: [WRONG]},
                                                   {"row": f"{P}/s1/t2", "id": "x", field: [WRONG]}])
        out = root / f"out_same_id_{cmd}"
        r = cli(cmd, "--rows", str(data["rows"]), "--tests", str(data["tests"]), f"--{field}", str(lines),
                "--out", str(out), "--no-progress")
        assert r.returncode == 0, r.stdout + r.stderr
        recs = list(read_jsonl(out / name))
        assert [(x["line"], x["outcome"]) for x in recs] == [(1, "WA"), (2, "INVALID_TASK")], recs
        assert "field 'id'" in recs[1]["reason"] and "line 1" in recs[1]["reason"]
        if cmd == "eval":
            rep = json.loads((out / "metrics.json").read_text())
            assert rep["n_programs"] == 1 and rep["n_excluded"] == 1, rep


def test_eval_a_precomputed_line_without_runtimes_is_excluded_alone(data):
    """``"runtimes": []`` once stopped the whole evaluation with no line named (the audit of December 2026); now it
    is an excluded program naming its line and field, as any other bad precomputed line."""
    gens = jl(data["root"] / "pre_empty.jsonl", [{"id": "a", "src_runtime": 6.0, "runtimes": [3.0]},
                                                 {"id": "b", "src_runtime": 2.0, "runtimes": []},
                                                 {"id": "c", "src_runtime": 2.0, "runtimes": "1.0"}])
    out = data["root"] / "eval_pre_empty"
    r = cli("eval", "--generations", str(gens), "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((out / "metrics.json").read_text())
    assert rep["n_programs"] == 1 and rep["metrics"][0]["mean_speedup"] == pytest.approx(2.0)
    reasons = {e["id"]: e["reason"] for e in rep["excluded"]}
    assert set(reasons) == {"b", "c"}
    assert all("line" in why and "'runtimes'" in why for why in reasons.values()), reasons


def test_eval_a_precomputed_id_given_twice_counts_once_and_best_at_k_says_where_it_stops(data):
    """A repeated ``id`` was counted as a second program (p1, p2, p1: %Opt 66.67 instead of 50; red team,
    pipelines): an id names one line, so the later line is excluded naming both. And best@k stops at the
    fewest generations of a program without a word; it says so now."""
    gens = jl(data["root"] / "pre_dup.jsonl", [{"id": "p1", "src_runtime": 10.0, "runtimes": [5.0, 5.0]},
                                               {"id": "p2", "src_runtime": 10.0, "runtimes": [None]},
                                               {"id": "p1", "src_runtime": 10.0, "runtimes": [5.0, 5.0]}])
    out = data["root"] / "eval_pre_dup"
    r = cli("eval", "--generations", str(gens), "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((out / "metrics.json").read_text())
    assert rep["n_programs"] == 2 and [p["id"] for p in rep["per_program"]] == ["p1", "p2"]
    assert rep["metrics"][0]["pct_opt"] == 50.0 and rep["metrics"][0]["mean_speedup"] == pytest.approx(1.5)
    (excluded,) = rep["excluded"]
    assert excluded["id"] == "p1" and "line 3" in excluded["reason"] and "earlier line" in excluded["reason"]
    assert rep["generations"] == {"fewest": 1, "most": 2, "fewest_id": "p2"}
    assert "best@k stops at k = 1" in " ".join(r.stdout.split())


def test_the_readmes_pie_commands_run_on_the_shipped_sample(tmp_path):
    """A new user could not run the README's PIE commands: nothing PIE-shaped shipped. ``data/pie`` does now, and the
    two commands of the README's PIE section give every candidate the outcome its kind must get."""
    readme = (REPO / "README.md").read_text()
    lines = [ln for ln in readme.splitlines() if ln.startswith("arbiter pie ") and "data/pie/" in ln]
    assert [ln.split()[2] for ln in lines] == ["reward", "eval"], lines
    for line in lines:
        args = line.split()[2:]
        args[args.index("--out") + 1] = str(tmp_path / args[args.index("--out") + 1])
        r = subprocess.run([*ARBITER, *args, "--no-progress"], cwd=REPO, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    recs = [json.loads(x) for x in (tmp_path / "out" / "pie" / "rewards.jsonl").read_text().splitlines()]
    assert [x["outcome"] for x in recs] == ["AC", "AC", "WA"] * 3, [x["outcome"] for x in recs]
    faster, itself, _ = recs[:3]
    assert itself["speedup"] == 1.0 and faster["speedup"] >= 1.0
    metrics = json.loads((tmp_path / "out" / "pie-eval" / "metrics.json").read_text())
    assert metrics["n_programs"] == 3 and metrics["n_excluded"] == 0, metrics
    best_of_3 = next(m for m in metrics["metrics"] if m["k"] == 3)
    assert best_of_3["pct_correct"] == 100.0 and best_of_3["mean_speedup"] >= 1.0, best_of_3
