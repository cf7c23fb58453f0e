"""The judge's semantics on real programs in the real sandbox, and the reward-hacking corpus."""

from __future__ import annotations

import decimal
import json
import re
import sys
from pathlib import Path

import pytest

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.judge import judge, judge_all
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, StdioCase, TestSuite
from arbiter.judge.verdict import Outcome, Verdict
from arbiter.sandbox.limits import Limits

CHEATS = Path(__file__).resolve().parents[1] / "cheats"


def digits(n: int) -> str:
    """``str(n)`` for any length without touching the process-wide int/str digit limit."""
    return str(decimal.Decimal(n))


def stdio(name: str, stdin: str, *answers: str) -> StdioCase:
    return StdioCase(name, stdin.encode(), tuple(a.encode() for a in answers))


# "print 1..n, one per line": the n=0 case expects empty output.
COUNT_UP = TestSuite((stdio("n0", "0\n", ""), stdio("n1", "1\n", "1\n"), stdio("n3", "3\n", "1\n2\n3\n"),
                      stdio("n5", "5\n", "1\n2\n3\n4\n5\n")))
DOUBLE = TestSuite((CallCase("x1", "f", (1,), {}, (2,)), CallCase("x2", "f", (2,), {}, (4,)),
                    CallCase("x7", "f", (7,), {}, (14,))))
MAYBE_NONE = TestSuite((CallCase("none", "g", (0,), {}, (None,)), CallCase("empty", "g", (1,), {}, ("",))))
TASKS = {"count_up": COUNT_UP, "double": DOUBLE, "maybe_none": MAYBE_NONE}


def header(path: Path) -> dict[str, str]:
    meta = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*([a-z]+):\s*(.*)$", line)
        if m:
            meta[m.group(1)] = m.group(2).strip()
    return meta


CHEAT_FILES = sorted(CHEATS.glob("*.py"))


@pytest.mark.parametrize("path", CHEAT_FILES, ids=[p.stem for p in CHEAT_FILES])
def test_reward_hacking_corpus(path: Path):
    meta = header(path)
    suite = TASKS[meta["task"]]
    task = Task("python", path.read_text(), suite, limits=Limits(cpu_seconds=2, output_bytes=1 << 20),
                checker=CheckerSpec("tokens"), run_all=True)
    v = judge(task)
    assert v.outcome.value == meta["expect"], (v.outcome, v.reason, [(c.name, c.outcome.value, c.detail, c.diff) for c in v.cases])
    assert v.score == (1.0 if meta["expect"] == "AC" else 0.0)


def test_zero_cases_is_invalid_task_never_a_pass():
    v = judge(Task("python", "print(1)\n", TestSuite(())))
    assert v.outcome is Outcome.INVALID_TASK and v.score == 0.0


def test_nonzero_exit_is_runtime_error_even_when_output_matches():
    suite = TestSuite((stdio("a", "", "ok\n"),))
    v = judge(Task("python", "print('ok')\nraise SystemExit(3)\n", suite))
    assert v.outcome is Outcome.RE
    assert v.cases[0].exit_code == 3
    ok = judge(Task("python", "print('ok')\nraise SystemExit(0)\n", suite))
    assert ok.outcome is Outcome.AC


def test_syntax_error_is_compile_error():
    v = judge(Task("python", "def f(:\n  pass\n", COUNT_UP))
    assert v.outcome is Outcome.CE
    assert "SyntaxError" in v.compile_output


def test_module_level_return_is_accepted_like_apps():
    """APPS/TACO wrap stdin programs in a function; 3 reference solutions of APPS 2287 rely on it."""
    src = "n = int(input())\nif n == 0:\n    return\nprint('\\n'.join(map(str, range(1, n + 1))))\n"
    assert judge(Task("python", src, COUNT_UP)).outcome is Outcome.AC


def test_all_or_nothing_stops_at_first_failure_and_fraction_runs_all():
    src = "n = int(input())\nprint('\\n'.join(map(str, range(1, n + 1))) if n != 1 else 'x')\n"
    v = judge(Task("python", src, COUNT_UP))
    assert v.outcome is Outcome.WA and v.score == 0.0
    assert [c.outcome for c in v.cases] == [Outcome.AC, Outcome.WA, Outcome.SKIPPED, Outcome.SKIPPED]
    assert v.passed == 1 and v.total == 4
    f = judge(Task("python", src, COUNT_UP, scoring="fraction"))
    assert f.score == pytest.approx(3 / 4)
    assert [c.outcome for c in f.cases] == [Outcome.AC, Outcome.WA, Outcome.AC, Outcome.AC]
    allrun = judge(Task("python", src, COUNT_UP, run_all=True))
    assert allrun.score == 0.0 and allrun.passed == 3


def test_wrong_answer_carries_a_short_diff():
    v = judge(Task("python", "print(1)\nprint(5)\n", TestSuite((stdio("a", "", "1\n2\n"),)), checker=CheckerSpec("exact")))
    assert v.outcome is Outcome.WA
    assert "2" in v.cases[0].diff and "5" in v.cases[0].diff


def test_limits_map_to_verdicts():
    lim = Limits(cpu_seconds=1, memory_bytes=64 << 20, output_bytes=1 << 20)
    one = TestSuite((stdio("a", "", "x\n"),))
    assert judge(Task("python", "while True: pass\n", one, limits=lim)).outcome is Outcome.TLE
    assert judge(Task("python", "x = bytearray(200 << 20)\nprint('x')\n", one, limits=lim)).outcome is Outcome.MLE
    assert judge(Task("python", "while True: print('y' * 100)\n", one, limits=lim)).outcome is Outcome.OLE
    assert judge(Task("python", "import os\nos.kill(os.getpid(), 11)\n", one, limits=lim)).outcome is Outcome.RE


def test_function_call_solution_class_kwargs_tuples_and_floats():
    suite = TestSuite((
        CallCase("pos", "split", (7,), {}, ([3.5, 3.5],)),
        CallCase("kw", "split", (), {"n": 1}, ([0.5, 0.5],)),
        CallCase("nested", "pairs", ([1, 2],), {}, ([[1, 0.3333333333]],)),
    ))
    src = (
        "class Solution:\n"
        "    def split(self, n):\n"
        "        return (n / 2, n / 2)\n"
        "    def pairs(self, xs):\n"
        "        return [(xs[0], xs[0] / 3)]\n"
    )
    v = judge(Task("python", src, suite, checker=CheckerSpec("tokens_float", abs_tol=1e-6, rel_tol=1e-6)))
    assert v.outcome is Outcome.AC, v.reason
    strict = TestSuite((CallCase("b", "is_even", (2,), {}, (True,)),))
    assert judge(Task("python", "def is_even(n):\n    return 1\n", strict)).outcome is Outcome.WA
    assert judge(Task("python", "def is_even(n):\n    return n % 2 == 0\n", strict)).outcome is Outcome.AC


def test_function_call_prints_do_not_matter_and_missing_function_is_runtime_error():
    suite = TestSuite((CallCase("a", "f", (1,), {}, (2,)),))
    noisy = "def f(x):\n    print('debug', x)\n    return x + 1\n"
    assert judge(Task("python", noisy, suite)).outcome is Outcome.AC
    v = judge(Task("python", "def g(x):\n    return x + 1\n", suite))
    assert v.outcome is Outcome.RE and "no function 'f'" in v.cases[0].detail


def test_leetcode_linked_list_and_tree_arguments():
    prelude = (
        "from typing import *\n"
        "class ListNode:\n"
        "    def __init__(self, val=0, next=None):\n"
        "        self.val = val\n"
        "        self.next = next\n"
        "class TreeNode:\n"
        "    def __init__(self, val=0, left=None, right=None):\n"
        "        self.val = val\n"
        "        self.left = left\n"
        "        self.right = right\n"
    )
    src = (
        "class Solution:\n"
        "    def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:\n"
        "        prev = None\n"
        "        while head:\n"
        "            head.next, prev, head = prev, head, head.next\n"
        "        return prev\n"
        "    def invertTree(self, root: Optional[TreeNode]) -> Optional[TreeNode]:\n"
        "        if root:\n"
        "            root.left, root.right = self.invertTree(root.right), self.invertTree(root.left)\n"
        "        return root\n"
    )
    suite = TestSuite((
        CallCase("list", "reverseList", (), {"head": [1, 2, 3]}, ([3, 2, 1],)),
        CallCase("empty", "reverseList", (), {"head": []}, ([],)),
        CallCase("tree", "invertTree", (), {"root": [4, 2, 7, 1, 3, 6, 9]}, ([4, 7, 2, 9, 6, 3, 1],)),
        CallCase("sparse", "invertTree", (), {"root": [2, None, 3]}, ([2, 3],)),
    ))
    v = judge(Task("python", src, suite, prelude=prelude))
    assert v.outcome is Outcome.AC, [(c.name, c.outcome.value, c.diff, c.detail) for c in v.cases]


def test_several_accepted_answers_and_case_insensitive():
    suite = TestSuite((stdio("a", "", "YES\n", "NO\n"),))
    assert judge(Task("python", "print('NO')\n", suite)).outcome is Outcome.AC
    assert judge(Task("python", "print('no')\n", suite)).outcome is Outcome.WA
    assert judge(Task("python", "print('no')\n", suite,
                      checker=CheckerSpec("tokens", case_insensitive=True))).outcome is Outcome.AC


def test_external_checker_testlib_convention():
    """A checker that accepts any permutation of 1..n (several valid answers)."""
    checker = (
        "import sys\n"
        "inp, out, ans = (open(p).read().split() for p in sys.argv[1:4])\n"
        "n = int(inp[0])\n"
        "sys.exit(0 if sorted(map(int, out)) == list(range(1, n + 1)) else 1)\n"
    )
    spec = CheckerSpec("external", program=checker, program_language="python")
    suite = TestSuite((stdio("p3", "3\n", "1 2 3\n"), stdio("p4", "4\n", "1 2 3 4\n")))
    rev = "n = int(input())\nprint(*range(n, 0, -1))\n"
    assert judge(Task("python", rev, suite, checker=spec)).outcome is Outcome.AC
    bad = "n = int(input())\nprint(*range(n))\n"
    assert judge(Task("python", bad, suite, checker=spec)).outcome is Outcome.WA


def test_judge_all_in_parallel_keeps_order():
    tasks = [Task("python", f"input()\nprint({i})\n", TestSuite((stdio("a", "\n", f"{i % 3}\n"),)))
             for i in range(6)]
    verdicts = judge_all(tasks, workers=2)
    assert [v.outcome for v in verdicts] == [Outcome.AC if i < 3 else Outcome.WA for i in range(6)]


def test_python_reads_binary_stdin_and_big_integers(default_int_limit):
    # (the judge process keeps its 4300-digit limit; the expected text comes from decimal)
    src = "import sys\ndata = sys.stdin.buffer.read().split()\nprint(int(data[0]) ** 2)\n"
    big = 10 ** 3000
    suite = TestSuite((StdioCase("big", digits(big).encode() + b"\n", (digits(big * big).encode() + b"\n",)),))
    assert judge(Task("python", src, suite)).outcome is Outcome.AC


def test_unusable_compile_command_is_invalid_task_and_missing_compiler_is_sandbox_error():
    from arbiter.judge.task import CompileSpec

    suite = TestSuite((stdio("a", "", "1\n"),))
    src = "#include <cstdio>\nint main(){puts(\"1\");}\n"
    bad = judge(Task("cpp", src, suite, compile=CompileSpec(command="g++ -O2 main.cpp -o main -I /etc")))
    assert bad.outcome is Outcome.INVALID_TASK and "-I" in bad.reason
    missing = judge(Task("cpp", src, suite, compile=CompileSpec(command="clang++-99 -O2 main.cpp -o main")))
    assert missing.outcome in (Outcome.SANDBOX_ERROR, Outcome.INVALID_TASK), missing.reason
    ok = judge(Task("cpp", src, suite))
    assert ok.outcome is Outcome.AC and ok.toolchain


def test_prelude_runs_once_but_every_case_starts_from_its_pristine_state():
    prelude = "from typing import List\nseen: List[int] = []\n"
    src = "n = int(input())\nseen.append(n)\nprint(len(seen))\n"
    suite = TestSuite((stdio("a", "5\n", "1\n"), stdio("b", "6\n", "1\n"), stdio("c", "7\n", "1\n")))
    assert judge(Task("python", src, suite, prelude=prelude)).outcome is Outcome.AC


def test_failing_prelude_is_the_tasks_fault():
    v = judge(Task("python", "print(1)\n", TestSuite((stdio("a", "", "1\n"),)), prelude="import no_such_module\n"))
    assert v.outcome is Outcome.INVALID_TASK and "no_such_module" in v.reason


def test_runtime_error_traceback_shows_the_program_not_the_harness():
    v = judge(Task("python", "def f():\n    return 1 / 0\nf()\n", TestSuite((stdio("a", "", "1\n"),))))
    assert v.outcome is Outcome.RE
    detail = v.cases[0].detail
    assert "ZeroDivisionError" in detail and 'main.py", line 2' in detail
    assert "server.py" not in detail


def test_exit_and_quit_work_as_in_python3_main_py():
    suite = TestSuite((stdio("a", "3\n", "3\n"),))
    assert judge(Task("python", "print(input())\nexit()\nprint('never')\n", suite)).outcome is Outcome.AC
    assert judge(Task("python", "print(input())\nquit(0)\n", suite)).outcome is Outcome.AC
    assert judge(Task("python", "print(input())\nexit(2)\n", suite)).outcome is Outcome.RE


#: A forkserver sends each child's descriptors over a Unix socket (``SCM_RIGHTS``), which the
#: seccomp filter refuses to every case (files in flight are memory no process holds, a false AC on
#: the memory limit: docs/sandbox.md, "Memory parked in flight: refused"); a false fail kept for that.
FORKSERVER_REFUSED = pytest.param("forkserver", marks=pytest.mark.xfail(
    strict=True, reason="a forkserver sends descriptors (SCM_RIGHTS): refused to cases"))


@pytest.mark.parametrize("method", ["spawn", FORKSERVER_REFUSED, "fork"])
def test_multiprocessing_pools_work_as_in_python3_main_py(method: str):
    """A spawn or forkserver child runs the program's file (``__main__.__file__``): it exists and
    holds the program, read-only (before, the children found no file and the pool waited: TLE)."""
    src = ("import multiprocessing as mp\n"
           "def sq(x):\n    return x * x\n"
           "if __name__ == '__main__':\n"
           "    n = int(input())\n"
           f"    with mp.get_context('{method}').Pool(2) as p:\n"
           "        print(sum(p.map(sq, range(n))))\n"
           "    print(open(__file__).read().startswith('import multiprocessing'))\n"
           "    try:\n        open(__file__, 'a')\n        print('writable')\n"
           "    except OSError:\n        print('read-only')\n")
    suite = TestSuite((stdio("a", "4\n", "14\nTrue\nread-only\n"), stdio("b", "3\n", "5\nTrue\nread-only\n")))
    v = judge(Task("python", src, suite, limits=Limits(cpu_seconds=5, wall_seconds=20)))
    assert v.outcome is Outcome.AC, (v.outcome, v.reason, [(c.name, c.detail) for c in v.cases])


def test_a_call_case_imports_the_program_its_main_block_does_not_run():
    """A call case runs the program as the reference harnesses import it (APPS/TACO, prime_code, LiveCodeBench:
    module ``tmp_sol``): a model's own ``if __name__ == "__main__":`` test, reading stdin, once ran and made a correct
    function RE (an audit, December 2026)."""
    src = ("class Solution:\n    def total(self, nums):\n        return sum(nums)\n"
           "if __name__ == '__main__':\n    nums = list(map(int, input().split()))\n"
           "    print(Solution().total(nums))\n")
    suite = TestSuite((CallCase("a", "total", ([1, 2, 3],), expected=(6,)),
                       CallCase("b", "total", ([],), expected=(0,))))
    v = judge(Task("python", src, suite))
    assert v.outcome is Outcome.AC, (v.reason, [(c.name, c.detail) for c in v.cases])
    named = judge(Task("python", "def name():\n    return __name__\n", TestSuite((CallCase("a", "name", (),
                                                                                                 expected=("__main__",)),))))
    assert named.outcome is Outcome.WA  # not "__main__", whatever the name
    stdin_mode = judge(Task("python", src, TestSuite((stdio("a", "1 2 3\n", "6\n"),))))
    assert stdin_mode.outcome is Outcome.AC  # a script still runs its __main__ block


@pytest.mark.parametrize("method", ["spawn", FORKSERVER_REFUSED, "fork"])
def test_a_call_case_may_use_a_pool_of_its_module_level_functions(method: str):
    """Under the call case's module name a pool's children still find the program's functions: a forked child
    in the module the case registers, a spawn or forkserver child in the file it runs."""
    src = ("import multiprocessing as mp\n"
           "def sq(x):\n    return x * x\n"
           "def total(n):\n"
           f"    with mp.get_context('{method}').Pool(2) as p:\n"
           "        return sum(p.map(sq, range(n)))\n")
    suite = TestSuite((CallCase("a", "total", (4,), expected=(14,)), CallCase("b", "total", (3,), expected=(5,))))
    v = judge(Task("python", src, suite, limits=Limits(cpu_seconds=5, wall_seconds=20)))
    assert v.outcome is Outcome.AC, (v.outcome, v.reason, [(c.name, c.detail) for c in v.cases])


def test_a_tree_argument_is_built_with_the_programs_own_class_under_optional():
    """``Optional[TreeNode]`` of a class the program defines reads ``<module>.TreeNode`` in the annotation's text;
    the harness drops the call case's module name as it drops ``__main__``."""
    src = ("from typing import Optional\n"
           "class TreeNode:\n    def __init__(self, val=0, left=None, right=None):\n"
           "        self.val, self.left, self.right = val, left, right\n"
           "class Solution:\n    def depth(self, root: Optional[TreeNode]) -> int:\n"
           "        return 0 if root is None else 1 + max(self.depth(root.left), self.depth(root.right))\n")
    suite = TestSuite((CallCase("a", "depth", ([3, 9, 20, None, None, 15, 7],), expected=(3,)),
                       CallCase("b", "depth", ([],), expected=(0,))))
    v = judge(Task("python", src, suite))
    assert v.outcome is Outcome.AC, (v.reason, [(c.name, c.detail) for c in v.cases])


def test_source_with_a_coding_line_is_decoded_like_a_file():
    src = "# -*- coding: latin-1 -*-\ns = '\xe9'\nprint(len(s))\n".encode("latin-1").decode("utf-8", "surrogateescape")
    assert judge(Task("python", src, TestSuite((stdio("a", "", "1\n"),)))).outcome is Outcome.AC


def test_numpy_return_values_are_plain_numbers_and_lists():
    suite = TestSuite((CallCase("s", "f", ([1, 2, 3],), {}, (6,)), CallCase("z", "g", (2,), {}, ([[0, 0], [0, 0]],)),
                       CallCase("b", "h", (), {}, (True,)), CallCase("x", "k", (), {}, (1.5,))))
    src = ("import numpy as np\n"
           "def f(a): return np.sum(a)\n"
           "def g(n): return np.zeros((n, n), dtype=int)\n"
           "def h(): return np.bool_(True)\n"
           "def k(): return np.float32(1.5)\n")
    v = judge(Task("python", src, suite, run_all=True))
    assert v.outcome is Outcome.AC, [(c.name, c.diff) for c in v.cases]
    wrong = judge(Task("python", src.replace("np.sum(a)", "np.sum(a) + 1"), suite))
    assert wrong.outcome is Outcome.WA


def test_a_failing_checker_is_the_tasks_fault_never_the_programs():
    suite = TestSuite((stdio("a", "3\n", "3\n"),))
    src = "print(input())\n"
    fail3 = CheckerSpec("external", program="import sys\nsys.exit(3)\n", program_language="python")
    v = judge(Task("python", src, suite, checker=fail3))
    assert v.outcome is Outcome.INVALID_TASK and "checker failed" in v.reason
    crash = CheckerSpec("external", program="raise KeyError('oops')\n", program_language="python")
    assert judge(Task("python", src, suite, checker=crash)).outcome is Outcome.INVALID_TASK
    pe = CheckerSpec("external", program="import sys\nsys.exit(2)\n", program_language="python")
    assert judge(Task("python", src, suite, checker=pe)).outcome is Outcome.WA
    broken = CheckerSpec("external", program="int main( { return 0; }\n", program_language="cpp")
    v = judge(Task("python", src, suite, checker=broken))
    assert v.outcome is Outcome.INVALID_TASK and "checker does not compile" in v.reason


# --- deep and huge return values (S1, S2) -------------------------------------------------------

DEEP_SRC = (
    "import sys\n"
    "def walrus():\n"  # the QA reproduction: 100000 levels, default recursion limit
    "    x = []\n"
    "    [x := [x] for _ in range(100000)]\n"
    "    return x\n"
    "def deep_list(n):\n"  # the program lifts its recursion limit, so the sandbox can serialise it
    "    sys.setrecursionlimit(10**8)\n"
    "    x = []\n"
    "    for _ in range(n):\n"
    "        x = [x]\n"
    "    return x\n"
    "def deep_dict(n):\n"
    "    sys.setrecursionlimit(10**8)\n"
    "    x = {}\n"
    "    for _ in range(n):\n"
    "        x = {'a': x}\n"
    "    return x\n"
    "def double(n):\n"
    "    return 2 * n\n"
)


def nested(depth: int) -> list:
    x: list = []
    for _ in range(depth):
        x = [x]
    return x


def test_deeply_nested_return_values_get_a_verdict_never_an_exception():
    suite = TestSuite((
        CallCase("walrus", "walrus", (), {}, ([],)),
        CallCase("list5000", "deep_list", (5000,), {}, ([],)),
        CallCase("dict5000", "deep_dict", (5000,), {}, ({},)),
        # 3,000,000 levels overflow the C stack (8 MiB) while the harness serialises the value
        CallCase("crash", "deep_list", (3_000_000,), {}, ([],)),
        CallCase("after", "double", (21,), {}, (42,)),  # the sandbox still works afterwards
        CallCase("list200", "deep_list", (200,), {}, (nested(200),)),  # deep but decodable: exact
        CallCase("list200_wrong", "deep_list", (200,), {}, (nested(199),)),
    ))
    task = Task("python", DEEP_SRC, suite, run_all=True,
                limits=Limits(cpu_seconds=10, memory_bytes=512 << 20, stack_bytes=8 << 20))
    v = judge(task)
    assert isinstance(v, Verdict)
    got = {c.name: c for c in v.cases}
    assert [c.name for c in v.cases] == [c.name for c in suite]
    # the sandbox's json.dumps hit its recursion limit: unserialisable -> WA
    assert got["walrus"].outcome is Outcome.WA and "RecursionError" in got["walrus"].diff
    # serialised in the sandbox, too deep for the judge process to decode -> WA, said so
    for name in ("list5000", "dict5000"):
        assert got[name].outcome is Outcome.WA, (name, got[name])
        assert "cannot be compared" in got[name].diff and "nested deeper" in got[name].diff
    # the serialiser overflowed the stack: the process died, RE (a signal, no result)
    assert got["crash"].outcome is Outcome.RE and got["crash"].signal is not None, got["crash"]
    assert got["after"].outcome is Outcome.AC
    assert got["list200"].outcome is Outcome.AC
    assert got["list200_wrong"].outcome is Outcome.WA and "$" + "[0]" * 199 in got["list200_wrong"].diff
    assert v.outcome is Outcome.WA and v.passed == 2


def test_function_returning_a_20000_bit_integer_against_a_json_ground_truth(default_int_limit):
    from arbiter.judge.encodings.verl import verl_ground_truth_to_suite

    big = 2**20000  # 6021 digits: beyond the judge process's 4300-digit limit
    def ground_truth(value_text: str) -> str:
        return ('[{"type": "function_call", "fn_name": "f", "input": [20000], "output": [%s]},'
                ' {"type": "function_call", "fn_name": "g", "input": [20000], "output": [[1, {"k": %s}]]}]'
                % (value_text, value_text))

    src = "def f(n):\n    return 2 ** n\ndef g(n):\n    return [1, {'k': 2 ** n}]\n"
    right = verl_ground_truth_to_suite(ground_truth(digits(big)), row="big")
    assert right.cases[0].expected == (big,)
    v = judge(Task("python", src, right, run_all=True))
    assert v.outcome is Outcome.AC, v.reason

    wrong = verl_ground_truth_to_suite(ground_truth(digits(big + 1)), row="big+1")
    v = judge(Task("python", src, wrong, run_all=True))
    assert v.outcome is Outcome.WA and [c.outcome for c in v.cases] == [Outcome.WA, Outcome.WA]
    diff = v.cases[0].diff
    assert "(6021 digits)" in diff and diff.count("...") >= 2, diff
    assert digits(big)[-10:] in diff and digits(big + 1)[-10:] in diff  # trailing digits differ
    assert v.cases[1].diff.startswith("at $[1]['k']:")
    assert sys.get_int_max_str_digits() == 4300  # the judge did not lift the limit


def test_function_called_with_integer_arguments_beyond_4300_digits(default_int_limit):
    """Arguments travel to the sandbox as JSON too: a 6,000-digit argument (positional and
    keyword) reaches the function whole, and the doubled value is judged exactly."""
    from arbiter.judge.encodings.verl import verl_ground_truth_to_suite

    x = 10**6000 - 1
    gt = ('[{"type": "function_call", "fn_name": "f", "input": [%s], "output": [%s]}]'
          % (digits(x), digits(2 * x)))
    suite = verl_ground_truth_to_suite(gt, row="bigarg")
    assert judge(Task("python", "def f(x):\n    return 2 * x\n", suite)).outcome is Outcome.AC
    assert judge(Task("python", "def f(x):\n    return 2 * x + 1\n", suite)).outcome is Outcome.WA
    kw = TestSuite([CallCase("kw", "f", kwargs={"x": x}, expected=(2 * x,))])
    assert judge(Task("python", "def f(x):\n    return 2 * x\n", kw)).outcome is Outcome.AC
    assert sys.get_int_max_str_digits() == 4300


def test_stdin_cases_with_huge_integer_tokens(default_int_limit):
    big = 2**20000
    src = "n = int(input())\nprint(2 ** n)\nprint(-(2 ** n), 7)\n"
    want = f"{digits(big)}\n{digits(-big)} 7\n".encode()
    off = f"{digits(big + 1)}\n{digits(-big)} 7\n".encode()
    for name in ("exact", "trailing_whitespace", "tokens", "tokens_float", "pie"):
        checker = CheckerSpec(name)
        ok = judge(Task("python", src, TestSuite((StdioCase("a", b"20000\n", (want,)),)), checker=checker))
        assert ok.outcome is Outcome.AC, (name, ok.reason)
        bad = judge(Task("python", src, TestSuite((StdioCase("a", b"20000\n", (off,)),)), checker=checker))
        assert bad.outcome is Outcome.WA, (name, bad.reason)
    # tokens_float: an expected huge plain integer takes only exactly that value, written any way
    padded = f"+000{digits(big)}.000\n{digits(-big)} 7.0\n".encode()
    prints_padded = f"print('+000' + str(2 ** 20000) + '.000')\nprint(-(2 ** 20000), '7.0')\n"
    v = judge(Task("python", prints_padded, TestSuite((StdioCase("a", b"", (want,)),)),
                   checker=CheckerSpec("tokens_float")))
    assert v.outcome is Outcome.AC, v.reason
    assert padded.split()[0] != want.split()[0]  # really a different spelling


# --- StdioCase / CallCase field validation (S3) ---------------------------------------------------

def test_stdio_case_accepts_str_and_lists_and_rejects_wrong_types():
    one = StdioCase("a", "3\n", "6\n")  # str stdin, a single str answer
    assert one.stdin == b"3\n" and one.expected == (b"6\n",)
    several = StdioCase(7, b"3\n", ["6\n", b"6.0\n"])  # an int name, a list of accepted answers
    assert several.name == "7" and several.expected == (b"6\n", b"6.0\n")
    assert StdioCase("b", bytearray(b"x"), b"y").expected == (b"y",)
    assert StdioCase("c", "\udcff", "é").stdin == b"\xff" and StdioCase("c", "", "é").expected == ("é".encode(),)
    with pytest.raises(TypeError, match=r"StdioCase 'a': expected must be bytes, str, or a tuple/list"):
        StdioCase("a", b"", None)
    with pytest.raises(TypeError, match=r"StdioCase 'a': expected\[1\] must be bytes or str, got int"):
        StdioCase("a", b"", (b"1", 1))
    with pytest.raises(TypeError, match=r"StdioCase 'a': stdin must be bytes or str, got list"):
        StdioCase("a", [b"1"], b"1")
    with pytest.raises(TypeError, match=r"name must be a str"):
        StdioCase(None, b"", b"1")
    with pytest.raises(ValueError, match="no expected output"):
        StdioCase("a", b"", [])
    # the converted case is judged like a bytes one (a str answer used to be a silent WA)
    suite = TestSuite([StdioCase("s", "3\n", "6\n"), StdioCase("l", "4\n", ["9\n", "8\n"])])
    v = judge(Task("python", "print(2 * int(input()))\n", suite, checker=CheckerSpec("exact")))
    assert v.outcome is Outcome.AC and v.passed == 2, v.reason


def test_call_case_and_suite_validation():
    c = CallCase("a", "f", [1, 2], {"k": 3}, ([1, 2],))
    assert c.args == (1, 2) and c.expected == ([1, 2],)
    with pytest.raises(TypeError, match=r"CallCase 'a': expected must be a tuple .*got list \(ambiguous"):
        CallCase("a", "f", (), {}, [1, 2])
    with pytest.raises(TypeError, match=r"CallCase 'a': fn_name must be a non-empty str"):
        CallCase("a", "", (), {}, (1,))
    with pytest.raises(TypeError, match=r"CallCase 'a': kwargs must be a mapping with str keys"):
        CallCase("a", "f", (), {1: 2}, (1,))
    with pytest.raises(TypeError, match=r"CallCase 'a': args must be a tuple"):
        CallCase("a", "f", 5, {}, (1,))
    with pytest.raises(TypeError, match=r"TestSuite: cases\[1\] must be a StdioCase or CallCase, got dict"):
        TestSuite((c, {"stdin": "", "stdout": ""}))


def test_a_forged_or_malformed_call_result_still_gets_a_verdict():
    # the program writes its own "result" on the harness's descriptor and leaves without
    # returning; whatever it wrote, judge() returns a verdict (never raises, never SANDBOX_ERROR)
    forged = {
        "fields of the wrong type": (b'{"ok": true, "unserializable": 5, "type": [1]}', Outcome.WA),
        "not an object": (b"[1, 2]", Outcome.RE),
        "not JSON": (b"\xff\xfe{", Outcome.RE),
        "too deep": (b'{"ok": true, "value": ' + b"[" * 5000 + b"]" * 5000 + b"}", Outcome.WA),
    }
    for label, (payload, outcome) in forged.items():
        src = f"import os\ndef f(x):\n    os.write(3, {payload!r})\n    os._exit(0)\n"
        v = judge(Task("python", src, TestSuite((CallCase("a", "f", (1,), {}, (2,)),))))
        assert isinstance(v, Verdict) and v.outcome is outcome, (label, v.outcome, v.reason)


# ------------------------------------------------------------------ a failed restart (issue 19 item 5)


def _flaky_sandbox_class(fail_run: int):
    """A real :class:`Sandbox` whose ``fail_run``-th case kills its own server (the run then fails
    as a real dead server fails: SANDBOX_ERROR) and whose every start after the first fails for
    real (its interpreter does not exist)."""
    import dataclasses

    from arbiter.sandbox.sandbox import Sandbox

    class FlakySandbox(Sandbox):
        starts = 0
        runs = 0

        def start(self):
            FlakySandbox.starts += 1
            if FlakySandbox.starts > 1:
                self.config = dataclasses.replace(self.config, python="/nonexistent/python3")
            super().start()

        def _run(self, req, stdin, limits, call_payload=None, last=False):
            FlakySandbox.runs += 1
            if FlakySandbox.runs == fail_run:
                self._kill_now()
            return super()._run(req, stdin, limits, call_payload, last)

    return FlakySandbox


@pytest.mark.parametrize("retries", [0, 1, 2])
def test_a_failed_sandbox_restart_is_sandbox_error_never_an_exception(monkeypatch, retries):
    """The second case's run fails (dead server), then every restart fails: the verdict is
    SANDBOX_ERROR naming both failures (before issue 19: ``AssertionError`` out of ``judge``)."""
    import arbiter.judge.runner as runner_mod

    flaky = _flaky_sandbox_class(fail_run=2)
    monkeypatch.setattr(runner_mod, "Sandbox", flaky)
    task = Task(language="python", source="for i in range(int(input())):\n    print(i + 1)\n", suite=COUNT_UP)
    v = judge(task, retries=retries)
    assert v.outcome is Outcome.SANDBOX_ERROR, v.reason
    assert [c.outcome for c in v.cases] == [Outcome.AC, Outcome.SANDBOX_ERROR]
    assert v.reason.startswith("case n1: ")
    if retries:
        assert "the sandbox could not be restarted after a failure" in v.reason and "/nonexistent/python3" in v.reason
        assert flaky.starts == 1 + retries and flaky.runs == 2  # no case ran without a sandbox
    else:
        assert "the sandbox server" in v.reason and flaky.starts == 1


def test_a_failed_restart_is_reported_by_compute_score(monkeypatch):
    import arbiter.judge.runner as runner_mod
    from arbiter.verl.reward import SandboxFailure, compute_score

    gt = {"inputs": ["1\n", "2\n"], "outputs": ["2\n", "4\n"]}
    response = "```python\nprint(2 * int(input()))\n```"
    monkeypatch.setattr(runner_mod, "Sandbox", _flaky_sandbox_class(fail_run=2))
    r = compute_score("code_taco", response, gt, {"index": 7}, on_sandbox_error="report")
    assert (r["verdict"], r["score"]) == ("SANDBOX_ERROR", 0.0)
    assert r["reason"].startswith("SANDBOX_ERROR") and "could not be restarted" in r["reason"]
    monkeypatch.setattr(runner_mod, "Sandbox", _flaky_sandbox_class(fail_run=2))
    with pytest.raises(SandboxFailure, match="could not be restarted"):
        compute_score("code_taco", response, gt, {"index": 7})


# ------------------------------------------------------------------ judge-side memory of a call's result (issue 19 item 3)


def _traced_judge(task: Task) -> tuple[Verdict, int]:
    """The verdict and the judge process's peak of traced allocations (bytes) while judging."""
    import tracemalloc

    tracemalloc.start()
    try:
        v = judge(task)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return v, peak


def test_a_huge_return_value_is_not_expanded_in_the_judge():
    """``return [[]] * 15_000_000``: 60 MB of JSON under the 64 MiB cap. Before issue 19 the judge
    decoded it (1.2 GB, 20x); now it is WA from a count of its items, and the judge holds little
    more than the result's bytes (read once, joined once)."""
    task = Task(language="python", source="def f():\n    return [[]] * 15_000_000\n",
                suite=TestSuite((CallCase("c1", "f", (), {}, ([[1]],)),)))
    v, peak = _traced_judge(task)
    assert v.outcome is Outcome.WA, v.reason
    assert "too large to match" in v.cases[0].diff and "30,000,000 containers/items/members" in v.cases[0].diff
    assert peak < 3 * 64 * 1024 * 1024, peak


def test_a_large_return_value_that_may_match_is_still_compared():
    """A result over the decode budget whose item count fits an expected value is decoded and
    compared as usual: AC when equal, WA with the checker's diff when not."""
    n = 1_000_000  # 4 MB of JSON, about 200 MB by the decode-cost bound
    src = f"def f(k):\n    return [[]] * {n} if k else [[]] * ({n} - 1) + [[0]]\n"
    suite = TestSuite((CallCase("same", "f", (1,), {}, ([[]] * n,)), CallCase("last", "f", (0,), {}, ([[]] * n,))))
    v = judge(Task(language="python", source=src, suite=suite, run_all=True))
    assert [c.outcome for c in v.cases] == [Outcome.AC, Outcome.WA], v.reason
    assert "too large" not in v.cases[1].diff and f"$[{n - 1}]" in v.cases[1].diff


def test_the_item_count_never_refuses_a_matching_value():
    """The count that refuses huge values is sound: a returned value that matches an expected one
    (ints for floats, floats for ints, any key order) never has more items than it."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from arbiter.checkers.compare import compare_values
    from arbiter.judge import evaluate as evaluate_mod

    leaves = st.one_of(st.integers(-10**20, 10**20), st.floats(allow_nan=False), st.booleans(), st.none(),
                       st.text(alphabet="ab,:[]{}\"\\ \u00e9\U0001F600", max_size=6))
    values = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(st.text(alphabet="k,:[{", max_size=3),
                                                                          inner, max_size=3)), max_leaves=25)

    def twin(v, flip):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, int):
            return float(v) if flip and abs(v) < 2**53 else v
        if isinstance(v, float):
            return int(v) if flip and v.is_integer() and abs(v) < 2**53 else v
        if isinstance(v, list):
            return [twin(x, flip) for x in v]
        return dict(reversed([(k, twin(x, flip)) for k, x in v.items()]))

    @settings(max_examples=500, deadline=None)
    @given(values, st.booleans())
    def check(expected, flip):
        actual = twin(expected, flip)
        if not compare_values(actual, expected).ok:
            return
        result = json.dumps({"ok": True, "value": actual}, allow_nan=True).encode()
        case = CallCase("c", "f", (), {}, (expected,))
        assert evaluate_mod._too_large_to_match(case, result) == ""

    check()


def test_a_checker_build_the_host_stopped_is_ours_and_never_reused(monkeypatch):
    """A checker whose compile hit its time limit (a loaded host) made the submission INVALID_TASK, and the
    step judge kept that verdict: after the host recovered, every identical submission was still INVALID_TASK
    (red team, December 2026). It is now SANDBOX_ERROR (never reused). The stopped build is what the C++
    language returns on its compile time limit, given for the checker's build only."""
    from arbiter.judge.step import Settings, StepJudge
    from arbiter.languages.base import COMPILE_TIME_LIMIT, BuildFailure, FailureKind
    from arbiter.languages.registry import get_language

    checker = ('#include <cstdio>\nint main(int c, char** v) { FILE* o = fopen(v[2], "r"); FILE* a = fopen(v[3], "r");\n'
               '  long x, y; if (fscanf(o, "%ld", &x) != 1 || fscanf(a, "%ld", &y) != 1) return 1; return x != y; }\n')
    task = Task("python", "print(int(input()) * 2)\n", TestSuite((StdioCase("a", "21\n", "42\n"),)),
                checker=CheckerSpec("external", program=checker, program_language="cpp"))
    cpp = type(get_language("cpp"))
    real_build = cpp.build

    def stopped(self, source, spec, *, entry="main"):
        if entry == "checker":
            return BuildFailure(FailureKind.COMPILE_ERROR, f"{COMPILE_TIME_LIMIT} (30 s)", f"{COMPILE_TIME_LIMIT} (30 s)")
        return real_build(self, source, spec, entry=entry)

    j = StepJudge(1)
    try:
        monkeypatch.setattr(cpp, "build", stopped)
        loaded = j.judge(task)
        assert loaded.outcome is Outcome.SANDBOX_ERROR, loaded.reason
        monkeypatch.setattr(cpp, "build", real_build)
        after = j.judge(task)
        assert after.outcome is Outcome.AC and not after.cached, after.reason
        assert j.judge(task, settings=Settings(reuse=False)).outcome is Outcome.AC
    finally:
        j.close()
