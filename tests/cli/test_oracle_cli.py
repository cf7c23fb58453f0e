"""``arbiter oracle verify`` and ``arbiter oracle generate`` as real subprocesses.

``generate`` talks over HTTP to a real local OpenAI-compatible server (:mod:`oracle_fake_server`) that answers
each seed task with scripted good and bad completions (taken from the demo rows, whose outcomes are documented
in ``data/oracle/README.md``); the verifier then keeps the fastest full-mark answer per task in ``best.jsonl``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracle_fake_server import FakeOpenAIServer, Script  # noqa: E402

from arbiter.datasets.oracle import load_seeds
from arbiter.datasets.io import read_jsonl

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data/oracle"
ARBITER = [sys.executable, "-m", "arbiter.cli.main"]
DEMO = {r["demo_id"]: r for r in map(json.loads, (DATA / "returns.jsonl").read_text().splitlines())}
SEEDS = load_seeds(DATA / "seeds.jsonl").rows
KEY = "sk-oracle-test"


def cli(*args: str, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([*ARBITER, "oracle", *args], capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env=dict(os.environ, COLUMNS="200", **(env or {})))


def rows(path: Path) -> list[dict]:
    return list(read_jsonl(path)) if path.exists() else []


def answer(demo_id: str) -> str:
    return DEMO[demo_id]["messages"][-1]["content"]


def test_verify_prints_the_table_and_writes_every_output(tmp_path):
    picked = ["good-0001", "fmt-unclosed-fence", "ce-0002-missing-semicolon", "wa-0004-visible", "slow-0001"]
    lines = [l for l in (DATA / "returns.jsonl").read_text().splitlines()
             if json.loads(l).get("demo_id") in picked or json.loads(l)["task_id"].endswith("0099_unknown")]
    returns = tmp_path / "returns.jsonl"
    returns.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    p = cli("verify", "--seeds", str(DATA / "seeds.jsonl"), "--returns", str(returns), "--out", str(out),
            "--hidden", str(DATA / "hidden_tests.json"), "--generators", str(DATA / "generators"),
            "--gen-plan", "1:2,2:2", "--parquet")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for text in ("oracle verification", "good-0001", "ACCEPTED", "REJECTED", "UNCLOSED_FENCE", "CE", "WA",
                 "SLOWER_THAN_SOURCE", "UNKNOWN_TASK_ID", "summary", "best answer per task"):
        assert text in p.stdout, text
    rep = json.loads((out / "report.json").read_text())
    assert rep["counts"]["rows"] == 6 and rep["counts"]["accepted"] == 1 and rep["counts"]["rejected"] == 5
    assert {r["stage"] for r in rep["rows"] if r["outcome"] == "rejected"} == {"format", "compile", "tests",
                                                                               "speed", "load"}
    import pyarrow.parquet as pq

    for name, n in (("sft", 1), ("verified", 1), ("rejected", 5), ("best", 1)):
        t = pq.read_table(out / f"{name}.parquet")
        assert t.num_rows == n, name
    sft = pq.read_table(out / "sft.parquet").to_pylist()
    assert sft[0]["messages"][-1]["content"] == answer("good-0001")
    rej = pq.read_table(out / "rejected.parquet").to_pylist()
    assert all(json.loads(r["reasons"]) for r in rej)  # nested values kept as JSON text


def test_verify_wall_measure_option(tmp_path):
    out = tmp_path / "out"
    p = cli("verify", "--seeds", str(DATA / "seeds.jsonl"), "--returns", str(DATA / "return_example.jsonl"),
            "--out", str(out), "--generators", str(DATA / "generators"), "--gen-plan", "3:1",
            "--measure", "wall", "--measure-cases", "1", "--no-rows")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (rec,) = rows(out / "verified.jsonl")
    m = rec["verification"]["measurement"]
    assert m["method"] == "wall" and m["unit"] == "seconds" and m["cases"][0]["case"] == "gen_s3_0"
    assert rec["verification"]["instructions"] is None and rec["verification"]["largest_speedup"] > 1
    assert rec["verification"]["speed_gate"] == "passed"
    assert m["cases"][0]["a_spread"]["wall"]["median"] > m["cases"][0]["b_spread"]["wall"]["median"]


@pytest.mark.parametrize("args, message", [
    (["--seeds", "/nonexistent/seeds.jsonl"], "seeds file not found"),
    (["--gen-plan", "1:0"], "COUNT must be >= 1"),
    (["--min-speedup", "0"], "min_speedup"),
])
def test_verify_bad_arguments_exit_2(tmp_path, args, message):
    base = {"--seeds": str(DATA / "seeds.jsonl"), "--returns": str(DATA / "return_example.jsonl"),
            "--out": str(tmp_path / "o")}
    for k, v in zip(args[::2], args[1::2]):
        base[k] = v
    p = cli("verify", *[x for kv in base.items() for x in kv])
    assert p.returncode == 2 and message in p.stdout, p.stdout + p.stderr


def _exact(seed):
    want = [{"role": m.role, "content": m.content} for m in seed.messages]
    return lambda messages: [{"role": m.get("role"), "content": m.get("content")} for m in messages] == want


SCRIPTED = {  # per task: three completions, one per sample (the server rotates through them)
    "dummy_pie_cpp_0001_sum_even": ["good-0001", "slow-0001", "fmt-unclosed-fence"],
    "dummy_pie_cpp_0002_prefix_queries": ["good-0002", "ce-0002-missing-semicolon", "fmt-fence-cxx"],
    "dummy_pie_cpp_0003_count_pairs": ["good-0003-hash", "good-0003-sort", "wa-0003-hidden-int-overflow"],
    "dummy_pie_cpp_0004_first_repeated": ["good-0004", "wa-0004-visible", "fmt-two-fences"],
    "dummy_pie_cpp_0005_matrix_row_max": ["good-0005", "ce-0005-undeclared", "fmt-missing-reasoning"],
}


def test_generate_then_verify_keeps_the_fastest_full_mark_answer_per_task(tmp_path):
    scripts = [Script(s.task_id, _exact(s), completions=[answer(d) for d in SCRIPTED[s.task_id]])
               for s in SEEDS]
    out = tmp_path / "gen"
    args = ["generate", "--seeds", str(DATA / "seeds.jsonl"), "--out", str(out), "--model", "fake-model",
            "--n", "3", "--concurrency", "2", "--hidden", str(DATA / "hidden_tests.json"),
            "--generators", str(DATA / "generators"), "--gen-plan", "1:2,2:2", "--no-progress"]
    with FakeOpenAIServer(scripts, api_key=KEY) as srv:
        # base URL and key from the environment, as with vLLM or a hosted API
        p = cli(*args, env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": srv.base_url})
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        assert len(srv.log) == 5 and all(e.status == 200 and e.n == 3 for e in srv.log)
        again = cli(*args, env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": srv.base_url})  # resumes: asks nothing
        assert again.returncode == 0 and len(srv.log) == 5
    returned = rows(out / "returns.jsonl")
    assert len(returned) == 15
    verified = rows(out / "verified.jsonl")
    by_content = {d: answer(d) for ds in SCRIPTED.values() for d in ds}
    accepted = sorted(next(d for d, c in by_content.items() if c == r["messages"][-1]["content"]) for r in verified)
    assert accepted == ["good-0001", "good-0002", "good-0003-hash", "good-0003-sort", "good-0004", "good-0005"]
    assert all(r["verification"]["claim_disagreements"] == [] and "placeholder" in r["verification"]["notes"]
               for r in verified)  # the writer's placeholder claims nothing
    rejected = {next(d for d, c in by_content.items() if c == r["row"]["messages"][-1]["content"]): r["stage"]
                for r in rows(out / "rejected.jsonl")}
    assert rejected == {"slow-0001": "speed", "fmt-unclosed-fence": "format", "ce-0002-missing-semicolon": "compile",
                        "fmt-fence-cxx": "format", "wa-0003-hidden-int-overflow": "tests", "wa-0004-visible": "tests",
                        "fmt-two-fences": "format", "ce-0005-undeclared": "compile",
                        "fmt-missing-reasoning": "format"}
    assert len(rows(out / "sft.jsonl")) == 6
    best = {b["task_id"]: b["messages"][-1]["content"] for b in rows(out / "best.jsonl")}
    assert len(best) == 5
    speed = {next(d for d, c in by_content.items() if c == r["messages"][-1]["content"]):
             r["verification"]["largest_speedup"] for r in verified}
    faster = max(("good-0003-hash", "good-0003-sort"), key=speed.get)
    assert best["dummy_pie_cpp_0003_count_pairs"] == answer(faster)
    assert best["dummy_pie_cpp_0001_sum_even"] == answer("good-0001")
    assert "best answer per task" in p.stdout


def test_generate_checks_the_endpoint_first_and_needs_no_api_key(tmp_path):
    """As ``arbiter sample``: the key is optional, and an endpoint that cannot be reached (or does not serve the
    model) stops the run with exit 2 before anything is asked or written."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    p = subprocess.run([*ARBITER, "oracle", "generate", "--seeds", str(DATA / "seeds.jsonl"), "--out",
                        str(tmp_path / "g"), "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
                       capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert p.returncode == 2 and "cannot reach the endpoint" in p.stdout, p.stdout + p.stderr
    assert not (tmp_path / "g" / "returns.jsonl").exists()


def test_our_own_failure_is_reported_not_rejected_and_a_rerun_retries(tmp_path):
    """Without valgrind the answer cannot be measured: that is our failure, not the program's. The row goes to
    errors.jsonl (exit 3), never to rejected.jsonl with score 0 (DESIGN.md: SANDBOX_ERROR is retried and
    reported, never a silent 0); the next run verifies it. A rerun with other verdict-changing options into the
    same folder is refused."""
    out = tmp_path / "out"
    args = ["verify", "--seeds", str(DATA / "seeds.jsonl"), "--returns", str(DATA / "return_example.jsonl"),
            "--out", str(out), "--no-rows"]
    p = cli(*args, env={"ARBITER_VALGRIND_LIB": str(tmp_path / "no-valgrind-here")})
    assert p.returncode == 3, p.stdout[-3000:] + p.stderr[-3000:]
    (err,) = rows(out / "errors.jsonl")
    assert "ValgrindUnavailable" in err["error"] and err["task_id"] == "dummy_pie_cpp_0001_sum_even"
    assert rows(out / "rejected.jsonl") == [] and rows(out / "verified.jsonl") == []
    p = cli(*args)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert len(rows(out / "verified.jsonl")) == 1 and rows(out / "rejected.jsonl") == []
    p = cli(*args, "--min-speedup", "2")
    assert p.returncode == 2 and "min_speedup" in p.stdout and "other inputs or options" in p.stdout


def test_real_seed_rows_and_card_return_example(tmp_path, shared):
    """The issue's "real input": the five seed rows and the card's return example from ../shared/seed/data
    (the product does not need ../shared; the shipped copies in data/oracle are byte-exact)."""
    seeds = shared / "seed/data/oracle_seed.jsonl"
    example = shared / "seed/data/oracle_return_example.jsonl"
    assert seeds.read_bytes() == (DATA / "seeds.jsonl").read_bytes()
    out = tmp_path / "real"
    p = cli("verify", "--seeds", str(seeds), "--returns", str(example), "--out", str(out),
            "--hidden", str(DATA / "hidden_tests.json"), "--generators", str(DATA / "generators"), "--no-rows")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (rec,) = rows(out / "verified.jsonl")
    assert rec["verification"]["score"] == 1.0 and rec["verification"]["speed_gate"] == "passed"
    assert rows(out / "sft.jsonl")[0]["messages"] == json.loads(example.read_text())["messages"]


def test_malformed_seed_rows_are_printed_and_their_returns_say_seed_row_rejected(tmp_path):
    """A seed row that does not load is printed (line, JSON path, reason); returns for its task are rejected as
    "seed row rejected", never UNKNOWN_TASK_ID. The other tasks go on; the terminal warns that a row was accepted
    on visible tests only (no --hidden / --generators)."""
    seed_lines = (DATA / "seeds.jsonl").read_text().splitlines()
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text("\n".join([seed_lines[0][:300]] + seed_lines[1:]) + "\n")  # task 0001's row: cut short
    returns = tmp_path / "returns.jsonl"
    returns.write_text((DATA / "return_example.jsonl").read_text().strip() + "\n" + json.dumps(DEMO["good-0002"]) + "\n")
    out = tmp_path / "out"
    p = cli("verify", "--seeds", str(seeds), "--returns", str(returns), "--out", str(out), "--no-progress")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    text = " ".join(p.stdout.split())
    assert f"seed row rejected: {seeds}:1 (task_id 'dummy_pie_cpp_0001_sum_even'): MALFORMED_JSON at $" in text, text
    rej = {r["line"]: r for r in rows(out / "rejected.jsonl") if r["kind"] == "return"}
    (reason,) = rej[1]["reasons"]
    assert reason["code"] == "SEED_REJECTED" and reason["message"].startswith("seed row rejected")
    assert "line 1" in reason["message"] and "MALFORMED_JSON" in reason["message"]
    assert "UNKNOWN_TASK_ID" not in p.stdout and "SEED_REJECTED" in p.stdout
    assert len(rows(out / "verified.jsonl")) == 1  # good-0002: its seed row is fine
    assert "warning:" in text and "visible tests only" in text and "--hidden" in text
    rep = json.loads((out / "report.json").read_text())
    assert rep["load_rejections"][0]["line"] == 1 and rep["load_rejections"][0]["code"] == "MALFORMED_JSON"


def test_no_usable_seed_row_exits_2_naming_every_rejection(tmp_path):
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text('{"task_id": "a", "source": \n{"task_id": "b"}\n')
    out = tmp_path / "out"
    p = cli("verify", "--seeds", str(seeds), "--returns", str(DATA / "return_example.jsonl"), "--out", str(out))
    assert p.returncode == 2, p.stdout[-3000:] + p.stderr[-3000:]
    text = " ".join(p.stdout.split())
    assert f"seed row rejected: {seeds}:1 (task_id 'a'): MALFORMED_JSON at $" in text, text
    assert f"seed row rejected: {seeds}:2 (task_id 'b'): SCHEMA at $" in text
    assert "no usable seed row" in text and "Traceback" not in p.stderr
    assert not (out / "report.json").exists()


def test_out_pointing_to_a_file_is_a_clear_error(tmp_path):
    target = tmp_path / "not_a_folder"
    target.write_text("x")
    for command in ("verify", "generate"):
        extra = ["--returns", str(DATA / "return_example.jsonl")] if command == "verify" else ["--model", "m"]
        p = cli(command, "--seeds", str(DATA / "seeds.jsonl"), *extra, "--out", str(target),
                env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
        assert p.returncode == 2, (command, p.stdout[-2000:] + p.stderr[-2000:])
        assert "exists and is not a folder" in " ".join(p.stdout.split()) and "Traceback" not in p.stderr
    assert target.read_text() == "x"


def _bad_hidden_inputs(tmp: Path) -> list[tuple[str, Path, str]]:
    """(what, path, the reason named after the path) for --hidden files that cannot be used as a whole."""
    (tmp / "invalid.json").write_text('{"dummy_pie_cpp_0001_sum_even": [{"name": "h1", ')
    (tmp / "latin1.json").write_bytes(b'{"dummy_pie_cpp_0001_sum_even": [{"name": "caf\xe9"}]}')
    (tmp / "list.json").write_text('[{"name": "h1", "stdin": "1\\n", "stdout": "1\\n"}]')
    (tmp / "empty.json").write_text("")
    (tmp / "junk.jsonl").write_text("not json\nnot json either\n")
    (tmp / "other_tasks.json").write_text(json.dumps({"no_such_task": [{"name": "h1", "stdin": "", "stdout": ""}]}))
    (tmp / "empty.jsonl").write_text("")
    (tmp / "empty_object.json").write_text("{}")
    (tmp / "no_cases.json").write_text(json.dumps({"dummy_pie_cpp_0001_sum_even": []}))
    (tmp / "a_folder").mkdir()
    os.mkfifo(tmp / "a_fifo")
    out = [("missing", tmp / "missing.json", "hidden tests file not found"),
           ("folder", tmp / "a_folder", "is a folder"),
           ("fifo", tmp / "a_fifo", "is not a regular file"),
           ("invalid JSON", tmp / "invalid.json", "MALFORMED_JSON"),
           ("not UTF-8", tmp / "latin1.json", "NOT_UTF8"),
           ("a list", tmp / "list.json", "expected an object task_id -> list of tests, got list"),
           # an empty .json is an empty file, as an empty .jsonl (was MALFORMED_JSON: a new user's trial)
           ("empty", tmp / "empty.json", "no hidden test case for any seed task (an empty file"),
           ("JSONL of junk", tmp / "junk.jsonl", "MALFORMED_JSON"),
           ("no seed task", tmp / "other_tasks.json", "UNKNOWN_TASK_ID"),
           # no case at all: every answer would be accepted on its visible tests (a new user, December 2026)
           ("empty JSONL", tmp / "empty.jsonl", "no hidden test case for any seed task"),
           ("an empty object", tmp / "empty_object.json", "no hidden test case for any seed task"),
           ("empty lists", tmp / "no_cases.json", "no hidden test case for any seed task")]
    if os.geteuid() != 0:  # root reads any file whatever its mode
        (tmp / "unreadable.json").write_text("{}")
        (tmp / "unreadable.json").chmod(0)
        out.append(("unreadable", tmp / "unreadable.json", "UNREADABLE_FILE"))
    return out


def test_verify_hidden_or_generators_that_cannot_be_used_exit_2_naming_the_file(tmp_path):
    """--hidden that does not exist, is not a regular file, cannot be read, is not UTF-8 / JSON, has another shape
    or names no seed task is refused (exit 2, the option and the file named, before anything is written): hidden
    tests asked for are never silently ignored. Same for --generators that is not a folder."""
    base = ["verify", "--seeds", str(DATA / "seeds.jsonl"), "--returns", str(DATA / "return_example.jsonl"),
            "--no-progress", "--no-rows"]
    for what, path, reason in _bad_hidden_inputs(tmp_path):
        out = tmp_path / f"out_{what.replace(' ', '_')}"
        p = cli(*base, "--out", str(out), "--hidden", str(path))
        text = " ".join(p.stdout.split())
        assert p.returncode == 2, (what, p.stdout[-2000:] + p.stderr[-2000:])
        assert f"error: --hidden {path}" in text and reason in text, (what, text)
        assert "Traceback" not in p.stderr and not out.exists(), what
    (tmp_path / "no_gens_in").mkdir()
    (tmp_path / "other_gens").mkdir()
    (tmp_path / "other_gens" / "not_a_seed_task.py").write_text("print(1)\n")
    for what, path, reason in (("missing", tmp_path / "no_gens", "generators folder not found"),
                               ("a file", DATA / "hidden_tests.json", "is a file"),
                               ("empty", tmp_path / "no_gens_in", "no <task_id>.py generator"),
                               ("other tasks", tmp_path / "other_gens", "no <task_id>.py generator for any seed task")):
        out = tmp_path / "out_gens"
        p = cli(*base, "--out", str(out), "--generators", str(path))
        text = " ".join(p.stdout.split())
        assert p.returncode == 2 and f"error: --generators {path}" in text and reason in text, (what, text)
        assert "Traceback" not in p.stderr and not out.exists()
    # a bad entry among good ones is rejected alone (its task INVALID_TASK); the run goes on
    hidden = json.loads((DATA / "hidden_tests.json").read_text())
    hidden["dummy_pie_cpp_0002_prefix_queries"][0].pop("stdout")
    one_bad = tmp_path / "one_bad_entry.json"
    one_bad.write_text(json.dumps(hidden))
    out = tmp_path / "out_one_bad"
    p = cli(*base, "--out", str(out), "--hidden", str(one_bad))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "hidden row rejected" in p.stdout and len(rows(out / "verified.jsonl")) == 1


def test_generate_refuses_a_bad_hidden_file_before_asking_the_model(tmp_path):
    bad = tmp_path / "hidden.json"
    bad.write_text("{not json")
    out = tmp_path / "gen"
    with FakeOpenAIServer([], api_key=KEY) as srv:
        p = cli("generate", "--seeds", str(DATA / "seeds.jsonl"), "--out", str(out), "--model", "fake-model",
                "--hidden", str(bad), "--no-progress", env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": srv.base_url})
        assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
        assert srv.log == []  # nothing was asked
    text = " ".join(p.stdout.split())
    assert f"error: --hidden {bad}" in text and "MALFORMED_JSON" in text and "Traceback" not in p.stderr
    assert not (out / "returns.jsonl").exists()


def test_verify_empty_returns_file_exits_2_naming_returns_but_binary_junk_is_rejected_per_row(tmp_path):
    """A --returns file with no row at all (empty, blank lines, a Parquet file of 0 rows) is refused like an empty
    --seeds file: exit 2 naming --returns and the file, nothing written. A file of binary junk is not empty: each
    line is rejected with its reason (stage load) and the run ends with exit 0."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "blank.jsonl").write_text("\n   \n\n")
    pq.write_table(pa.table({"task_id": pa.array([], pa.string())}), tmp_path / "empty.parquet")
    for name in ("empty.jsonl", "blank.jsonl", "empty.parquet"):
        out = tmp_path / f"out_{name}"
        p = cli("verify", "--seeds", str(DATA / "seeds.jsonl"), "--returns", str(tmp_path / name), "--out", str(out),
                "--no-progress")
        text = " ".join(p.stdout.split())
        assert p.returncode == 2, (name, p.stdout[-2000:] + p.stderr[-2000:])
        assert f"error: --returns {tmp_path / name}: empty (no rows)" in text, (name, text)
        assert "Traceback" not in p.stderr and not out.exists(), name
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\x00\xff\xfe binary \x89PNG\r\n\x89PNG\r\n\x1a\n")
    out = tmp_path / "out_junk"
    p = cli("verify", "--seeds", str(DATA / "seeds.jsonl"), "--returns", str(junk), "--out", str(out),
            "--no-progress")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rejected = [r for r in rows(out / "rejected.jsonl") if r.get("kind") == "return"]
    assert [r["line"] for r in rejected] == [1, 2, 3] and all(r["stage"] == "load" for r in rejected), rejected
    assert all(r["reasons"] and r["reasons"][0]["code"] in ("NOT_UTF8", "MALFORMED_JSON") for r in rejected)


def test_help_names_the_default_measure_and_why():
    """``--help`` of verify and generate says which measure the speed gate uses by default (cycles) and why."""
    for cmd in ("verify", "generate"):
        r = cli(cmd, "--help")
        text = " ".join(r.stdout.replace("│", " ").split())
        assert r.returncode == 0, r.stderr
        assert "cycles (default)" in text and "gem5" in text and "[default: cycles]" in text, text
