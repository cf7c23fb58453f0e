"""The command line, run as a user runs it (a real subprocess of the installed console script)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ARBITER = Path(sys.executable).with_name("arbiter")


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(ARBITER), *args], capture_output=True, text=True, timeout=300, **kw)


def test_doctor_says_isolation_works():
    r = run("doctor")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "untrusted code runs isolated" in r.stdout
    for line in ("pid namespace", "network namespace", "bubblewrap", "valgrind", "python for untrusted code",
                 "seccomp filter"):
        assert line in r.stdout


def test_doctor_fails_loudly_when_isolation_is_opted_out(tmp_path):
    import os

    env = dict(os.environ, ARBITER_UNSAFE_NO_ISOLATION="I_UNDERSTAND_UNTRUSTED_CODE_RUNS_ON_THIS_HOST")
    r = run("doctor", env=env)
    assert r.returncode == 1
    assert "DISABLED" in r.stdout


def test_judge_command_table_json_and_exit_status(tmp_path):
    prog = tmp_path / "sum.py"
    prog.write_text("input()\nprint(sum(map(int, input().split())))\n")
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps([{"name": "a", "stdin": "3\n1 2 3\n", "stdout": "6\n"},
                                 {"name": "b", "stdin": "1\n5\n", "stdout": "5\n"}]))
    r = run("judge", "--lang", "python", "--tests", str(tests), "--checker", "exact", str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2/2 passed" in r.stdout
    r = run("judge", "--lang", "python", "--tests", str(tests), "--json", str(prog))
    verdict = json.loads(r.stdout)
    assert verdict["outcome"] == "AC" and verdict["score"] == 1.0 and len(verdict["cases"]) == 2
    prog.write_text("print(6)\n")
    r = run("judge", "--lang", "python", "--tests", str(tests), "--json", str(prog))
    assert r.returncode == 1
    assert json.loads(r.stdout)["outcome"] in ("WA", "RE")


def test_judge_command_rejects_unknown_test_shapes(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("print(1)\n")
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps({"what": 1}))
    r = run("judge", "--lang", "python", "--tests", str(bad), str(prog))
    assert r.returncode == 2
    assert "unrecognised test file shape" in r.stdout + r.stderr


def test_judge_command_runs_the_apps_import_block_for_apps_tests(tmp_path):
    io_file = tmp_path / "input_output.json"
    io_file.write_text(json.dumps({"fn_name": "f", "inputs": [[[1, 2, 3]]], "outputs": [6]}))
    prog = tmp_path / "s.py"
    prog.write_text("class Solution:\n    def f(self, a: List[int]) -> int:\n        return sum(a)\n")
    assert run("judge", "--lang", "python", "--tests", str(io_file), str(prog)).returncode == 0
    bare = run("judge", "--lang", "python", "--tests", str(io_file), "--prelude", "none", "--json", str(prog))
    assert bare.returncode == 1 and "NameError" in bare.stdout


def test_judge_command_zero_tests_is_an_error_never_a_pass(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("print(1)\n")
    empty = tmp_path / "t.json"
    empty.write_text("[]")
    r = run("judge", "--lang", "python", "--tests", str(empty), str(prog))
    assert r.returncode == 2 and "zero cases" in r.stdout + r.stderr
