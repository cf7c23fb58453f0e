"""GNU C through the language registry: one module (``languages/c.py``) and one registry line.

- every GNU C row of ``realdata/codescope_codeopt``: both programs, every test, ``tokens`` checker,
  the default ``gcc -std=gnu11 -O2 -lm -DONLINE_JUDGE`` and an explicit command, all AC;
- the C compile command has its own allowlist (gcc drivers, ``.c`` sources, C standards);
- a compile error is CE, C and C++ compiles of the same bytes are cached apart;
- every registered language's self-test program is AC through the judge (``arbiter doctor``).
"""

from __future__ import annotations

import json
import time

import pytest

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.encodings import codescope_row_to_suite
from arbiter.judge.judge import judge, judge_many
from arbiter.judge.selftest import run_self_tests
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.languages.compile_cache import compile_key
from arbiter.languages.cpp.command import CompileCommandError, parse_compile_command
from arbiter.languages.c import C_DIALECT
from arbiter.languages.registry import LANGUAGES, get_language, language_for_file, language_names
from arbiter.sandbox.limits import MiB, Limits

GENEROUS = Limits(cpu_seconds=10, wall_seconds=30, memory_bytes=1024 * MiB)
DOUBLE = TestSuite((StdioCase("a", b"3\n", (b"6\n",)), StdioCase("b", b"-4\n", (b"-8\n",))))
C_DOUBLE = '#include <stdio.h>\nint main(void){long long x; scanf("%lld",&x); printf("%lld\\n", 2*x); return 0;}\n'


def test_c_is_registered_with_its_file_suffix():
    assert "c" in language_names() and LANGUAGES["c"] is get_language("c")
    assert language_for_file("sol.c").name == "c" and language_for_file("sol.cpp").name == "cpp"
    assert get_language("c").compiled and not get_language("c").call_cases


def test_c_compile_command_allowlist():
    default = parse_compile_command(None, dialect=C_DIALECT)
    assert (default.compiler, default.source_name) == ("gcc", "main.c")
    assert default.flags == ("-std=gnu11", "-O2", "-lm", "-DONLINE_JUDGE")
    cmd = parse_compile_command("gcc -std=c11 -O2 sol.c -o sol -lm", dialect=C_DIALECT)
    assert (cmd.source_name, cmd.output_name, cmd.flags) == ("sol.c", "sol", ("-std=c11", "-O2", "-lm", "-DONLINE_JUDGE"))
    for bad, needle in [("g++ main.c -o main", "not a gcc/clang compiler"),
                        ("gcc main.cpp -o main", "not a C source file name"),
                        ("gcc -std=gnu++17 main.c", "-std=cNN or -std=gnuNN"),
                        ("gcc -I/etc main.c", "include paths")]:
        with pytest.raises(CompileCommandError, match=needle):
            parse_compile_command(bad, dialect=C_DIALECT)


def test_c_program_ac_and_compile_error_ce_and_bad_command_invalid_task():
    ok = judge(Task(language="c", source=C_DOUBLE, suite=DOUBLE))
    assert ok.outcome is Outcome.AC, ok.reason
    assert ok.toolchain and ok.toolchain["compiler"] == "gcc" and "-std=gnu11" in ok.toolchain["flags"]
    ce = judge(Task(language="c", source="int main(void) { return x; }\n", suite=DOUBLE))
    assert ce.outcome is Outcome.CE and "x" in ce.compile_output
    cxx_only = judge(Task(language="c", source="#include <vector>\nint main(){std::vector<int> v;}\n", suite=DOUBLE))
    assert cxx_only.outcome is Outcome.CE  # C, not C++
    bad = judge(Task(language="c", source=C_DOUBLE, suite=DOUBLE, compile=CompileSpec(command="g++ main.c")))
    assert bad.outcome is Outcome.INVALID_TASK and bad.reason.startswith("compile command:")


def test_the_compile_cache_key_names_the_language():
    args = (b"int main(){}", "main.c", ("-O2",), "fp")
    assert compile_key(*args, language="c") != compile_key(*args, language="cpp")
    assert compile_key(*args) == compile_key(*args, language="cpp")


def test_every_registered_language_passes_its_self_test():
    results = run_self_tests()
    assert [name for name, _ in results] == list(language_names())
    for name, verdict in results:
        assert verdict.outcome is Outcome.AC, (name, verdict.reason, verdict.compile_output[:300])


@pytest.mark.slow
@pytest.mark.parametrize("command", [None, "gcc -std=gnu11 -O2 main.c -o main -lm"])
def test_codescope_gnu_c_rows_both_programs_ac(shared, command):
    rows = [json.loads(line) for line in
            (shared / "realdata" / "codescope_codeopt" / "code_optimization_data.jsonl").open()]
    c_rows = [r for r in rows if r["lang"] == "GNU C"]
    assert c_rows
    tasks = []
    for row in c_rows:
        suite = codescope_row_to_suite(row)
        assert len(suite) > 0
        for field in ("time_baseline_source_code", "memory_baseline_source_code"):
            tasks.append(Task(language="c", source=row[field], suite=suite, limits=GENEROUS,
                              checker=CheckerSpec(name="tokens"),
                              compile=CompileSpec(command=command, timeout_seconds=60),
                              task_id=f"codescope:{row['id']}:{field}"))
    started = time.monotonic()
    verdicts = list(judge_many(tasks, workers=2))
    bad = [f"{t.task_id}: {v.outcome.value} {v.reason} {v.compile_output[:300]}"
           for t, v in zip(tasks, verdicts) if v.outcome is not Outcome.AC]
    print(f"\ncodescope GNU C: {len(c_rows)} rows, {len(tasks)} programs, "
          f"{sum(v.total for v in verdicts)} case runs in {time.monotonic() - started:.1f} s, "
          f"AC {len(tasks) - len(bad)}/{len(tasks)}")
    assert not bad, "\n".join(bad)
    for v in verdicts:
        assert v.passed == v.total > 0
        assert v.toolchain and v.toolchain["compiler"] == "gcc" and "-DONLINE_JUDGE" in v.toolchain["flags"]
