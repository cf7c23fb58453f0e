"""The command line, run as a user runs it (a real subprocess of the installed console script)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_judge_command_a_pie_tests_root_asks_for_the_problem_as_its_archive_does(tmp_path):
    """A folder of problem folders named the missing ``--problem`` only as a ``.tar.gz`` (a new user, December
    2026); as a folder it said "zero test cases"."""
    prog = tmp_path / "p.py"
    prog.write_text("print(2 * int(input()))\n")
    for problem, n in (("p1", 3), ("p2", 4)):
        for i in range(2):
            (tmp_path / "tests" / problem).mkdir(parents=True, exist_ok=True)
            (tmp_path / "tests" / problem / f"input.{i}.txt").write_text(f"{n + i}\n")
            (tmp_path / "tests" / problem / f"output.{i}.txt").write_text(f"{2 * (n + i)}\n")
    r = run("judge", "--lang", "python", "--tests", str(tmp_path / "tests"), str(prog))
    assert r.returncode == 2 and "needs --problem <problem_id>" in " ".join((r.stdout + r.stderr).split()), r.stdout
    r = run("judge", "--lang", "python", "--tests", str(tmp_path / "tests"), "--problem", "p2", "--json", str(prog))
    assert r.returncode == 0 and json.loads(r.stdout)["outcome"] == "AC", r.stdout + r.stderr
    r = run("judge", "--lang", "python", "--tests", str(tmp_path / "tests" / "p1"), "--json", str(prog))
    assert r.returncode == 0 and json.loads(r.stdout)["outcome"] == "AC", r.stdout + r.stderr


def test_judge_command_bad_options_exit_2_naming_the_option(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("print(2 * int(input()))\n")
    cpp = tmp_path / "p.cpp"
    cpp.write_text('#include <cstdio>\nint main(){int x;scanf("%d",&x);printf("%d\\n",2*x);}\n')
    tests = tmp_path / "t.json"
    tests.write_text(json.dumps([{"type": "stdin_stdout", "input": "3\n", "output": "6\n"}]))
    not_utf8 = tmp_path / "prelude.py"
    not_utf8.write_bytes(b"\xff\xfe x = 1\n")
    py = ("judge", "--lang", "python", "--tests", str(tests))
    bad = {
        "--compile-command 'rm -rf /'": (("judge", "--lang", "cpp", "--tests", str(tests), "--compile-command",
                                          "rm -rf /", str(cpp)), ["--compile-command", "'rm' is not a g++/clang++"]),
        "unbalanced quotes": (("judge", "--lang", "cpp", "--tests", str(tests), "--compile-command",
                               'g++ "main.cpp', str(cpp)), ["--compile-command", "No closing quotation"]),
        "include path": (("judge", "--lang", "cpp", "--tests", str(tests), "--compile-command",
                          "g++ -O2 main.cpp -o main -I /etc", str(cpp)), ["--compile-command", "-I"]),
        "compile command for python": ((*py, "--compile-command", "g++ main.cpp", str(prog)),
                                       ["--compile-command applies to --lang cpp only"]),
        "negative memory": ((*py, "--memory-limit", "-5", str(prog)), ["--memory-limit", "got -5"]),
        "zero memory": ((*py, "--memory-limit", "0", str(prog)), ["--memory-limit", "MiB"]),
        "zero time": ((*py, "--time-limit", "0", str(prog)), ["--time-limit", "CPU seconds"]),
        "negative time": ((*py, "--time-limit", "-1.5", str(prog)), ["--time-limit", "got -1.5"]),
        "nan time": ((*py, "--time-limit", "nan", str(prog)), ["--time-limit", "got nan"]),
        "huge time": ((*py, "--time-limit", "1e12", str(prog)), ["--time-limit", "(0, 86400]"]),
        "missing prelude": ((*py, "--prelude", str(tmp_path / "nope.py"), str(prog)),
                            ["--prelude", "no such file", str(tmp_path / "nope.py")]),
        "prelude is a directory": ((*py, "--prelude", str(tmp_path), str(prog)), ["--prelude", "not a regular file"]),
        "prelude not utf-8": ((*py, "--prelude", str(not_utf8), str(prog)), ["--prelude", "not UTF-8", str(not_utf8)]),
        "missing tests": (("judge", "--lang", "python", "--tests", str(tmp_path / "none.json"), str(prog)),
                          ["--tests: no such file or directory", str(tmp_path / "none.json")]),
        # a regular file whose read fails even for root (EIO)
        "unreadable tests": (("judge", "--lang", "python", "--tests", "/proc/self/mem", str(prog)),
                             ["--tests: cannot read /proc/self/mem"]),
        "tests is a directory without tests": (("judge", "--lang", "python", "--tests", str(tmp_path / "empty"), str(prog)),
                                               ["--tests:", "zero test cases"]),
    }
    (tmp_path / "empty").mkdir()
    for label, (args, needles) in bad.items():
        r = run(*args)
        out = r.stdout + r.stderr
        assert r.returncode == 2, (label, r.returncode, out)
        assert "Traceback" not in out, (label, out)
        for needle in needles:
            assert needle in out, (label, needle, out)
    # the same options with usable values still judge (real sandbox, real compiler)
    good_prelude = tmp_path / "ok_prelude.py"
    good_prelude.write_text("import math\n")
    r = run(*py, "--prelude", str(good_prelude), "--time-limit", "1.5", "--memory-limit", "128", str(prog))
    assert r.returncode == 0 and "1/1 passed" in r.stdout, r.stdout + r.stderr
    r = run("judge", "--lang", "cpp", "--tests", str(tests), "--compile-command",
            "g++ -std=c++17 -O2 main.cpp -o main", "--json", str(cpp))
    assert r.returncode == 0 and json.loads(r.stdout)["outcome"] == "AC", r.stdout + r.stderr


@pytest.mark.parametrize("cases", [1, 300])
@pytest.mark.parametrize("as_json", [True, False])
@pytest.mark.parametrize("program", ["wrong", "right"])
def test_judge_command_output_that_cannot_be_written_is_status_120_never_a_verdict(tmp_path, cases, as_json, program):
    """A full disk must not read as a verdict: neither a rejection (1) nor, for an accepted program, a crash
    with a traceback and 1. The table and --json, small output (flushed at exit) and a verdict larger than the
    buffer (written while printing)."""
    import os

    prog = tmp_path / "prog.py"
    prog.write_text("print(input())\n" if program == "right" else "print(0)\n")
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps([{"name": f"c{i}", "stdin": f"{i + 1}\n", "stdout": f"{i + 1}\n"} for i in range(cases)]))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # (the flush at exit)
    args = [str(ARBITER), "judge", str(prog), "--lang", "python", "--tests", str(tests), "--run-all"]
    ok = subprocess.run(args + (["--json"] if as_json else []), capture_output=True, text=True, timeout=600, env=env)
    assert ok.returncode == (0 if program == "right" else 1), ok.stderr
    with open("/dev/full", "w") as full:
        r = subprocess.run(args + (["--json"] if as_json else []), stdout=full, stderr=subprocess.PIPE, text=True,
                           timeout=600, env=env)
    assert r.returncode == 120, r.stderr
    assert "could not be written" in r.stderr and "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
