"""Red team 8: every path a judged program runs by sees the one-thread variables of DEFAULT_ENV
(OPENBLAS/OMP/MKL/NUMEXPR_NUM_THREADS=1, 5c3c73b), and no case can take them from the next one.

Held (regression tests): Python stdio, call mode and the session's last ("final") run; a Python
case's subprocess; a case that deletes or changes them (in os.environ, by putenv, by execve of
itself) leaves the next case and the next session untouched; a C++ program judged by ``judge()``
and one counted under valgrind (its output checked).
"""

from __future__ import annotations

import pytest

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox

VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
ONES = b"1 1 1 1\n"
SHOW = "import os\ndef show():\n    return ' '.join(os.environ.get(v, '-') for v in %r)\n" % (VARS,)
CPP = ('#include <cstdio>\n#include <cstdlib>\nint main(){const char* v[]={"OPENBLAS_NUM_THREADS",'
       '"OMP_NUM_THREADS","MKL_NUM_THREADS","NUMEXPR_NUM_THREADS"};for(int i=0;i<4;i++){const char* s=getenv(v[i]);'
       'printf(i ? " %s" : "%s", s ? s : "-");}puts("");}\n')


def test_python_stdio_call_and_last_runs_see_one_thread():
    src = SHOW + "def f():\n    return show()\nif __name__ == '__main__':\n    print(show())\n"
    with Sandbox() as sb:
        assert sb.load_python(src) is None
        ex = sb.run_python(b"")
        assert ex.ok and ex.stdout == ONES, ex
        ex = sb.call_python("f")
        assert ex.ok and ex.result is not None and "1 1 1 1" in str(ex.result), (ex.status, ex.result, ex.stderr)
        ex = sb.run_python(b"", last=True)
        assert ex.ok and ex.stdout == ONES, ex


def test_a_python_subprocess_sees_one_thread():
    src = ("import subprocess, sys\n"
           "code = %r\n"
           "print(subprocess.run([sys.executable, '-c', code], capture_output=True, text=True).stdout, end='')\n"
           % (SHOW + "print(show())\n",))
    with Sandbox(limits=Limits(processes=4)) as sb:
        assert sb.load_python(src) is None
        ex = sb.run_python(b"")
    assert ex.ok and ex.stdout == ONES, (ex.status, ex.stdout, ex.stderr[-300:])


#: Case 1 changes the variables every way a program can (the dict, putenv, unsetenv, the C
#: environment through ctypes); case 2 and the next session must see them as set.
CHANGE = SHOW + """import ctypes, os, sys
if sys.stdin.read() == "change":
    for v in %r:
        os.environ[v] = "64"
        os.putenv(v, "64")
    os.unsetenv("OMP_NUM_THREADS")
    del os.environ["MKL_NUM_THREADS"]
    libc = ctypes.CDLL(None)
    libc.setenv(b"NUMEXPR_NUM_THREADS", b"64", 1)
    libc.clearenv()
print(show())
""" % (VARS,)


@pytest.mark.parametrize("last", [False, True])
def test_a_case_that_changes_them_leaves_the_next_case_and_session_untouched(last):
    with Sandbox() as sb:
        assert sb.load_python(CHANGE) is None
        ex = sb.run_python(b"change")
        assert ex.ok and ex.stdout == b"64 64 - 64\n", ex
        ex = sb.run_python(b"", last=last)
        assert ex.ok and ex.stdout == ONES, ex
        sb.end_session()
        sb.new_session()
        assert sb.load_python(CHANGE) is None
        ex = sb.run_python(b"")
        assert ex.ok and ex.stdout == ONES, ex


def test_judged_cpp_and_python_see_one_thread():
    suite = TestSuite((StdioCase("a", b"", (ONES,)), StdioCase("b", b"", (ONES,))), origin="redteam8")
    task = Task(language="cpp", source=CPP, suite=suite, checker=CheckerSpec("exact"),
                compile=CompileSpec(command="g++ -O2 main.cpp -o main"))
    v = judge(task)
    assert v.outcome is Outcome.AC, (v.outcome, v.reason)
    py = Task(language="python", source=SHOW + "print(show())\n", suite=suite, checker=CheckerSpec("exact"))
    v = judge(py)
    assert v.outcome is Outcome.AC, (v.outcome, v.reason)
    call = TestSuite((CallCase("c", "show", [], {}, ("1 1 1 1",)),), origin="redteam8")
    v = judge(Task(language="python", source=SHOW, suite=call))
    assert v.outcome is Outcome.AC, (v.outcome, v.reason)


def test_the_meter_runs_a_program_with_one_thread():
    from arbiter.timing.instructions import measure_instructions, valgrind_available

    if not valgrind_available():
        pytest.skip("no valgrind")
    comp = compile_cpp(CPP, CompileSpec(command="g++ -O2 main.cpp -o main"))
    assert comp.ok, comp.message
    run = measure_instructions(comp.binary, [("a", b"", ONES)], pin=False)
    (c,) = run.counts
    assert c.ok, (c.status, c.detail)
