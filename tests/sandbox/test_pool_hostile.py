"""Hostile and cheating submissions through the warm pool: each runs as submission A, then an
honest submission B is judged on the same, reused sandbox and must get its honest verdict (AC).

Every program of tests/hostile (with the limits and input its header asks for) and every
reward-hacking program of tests/cheats (on its task). The pool is the process's default one,
configured so B can only get A's sandbox: no spares, one idle sandbox kept.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.judge import judge
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox import pool as pool_module
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.pool import SandboxPool
from test_hostile import PROGRAMS, limits_from, parse_header

TESTS = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("_judge_cheats", TESTS / "judge" / "test_judge.py")
cheats = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cheats)

CPP_COMPILE = CompileSpec("g++ -std=gnu++17 -O2 -pthread main.cpp -o main", 120)
HONEST = {
    "python": "print(int(input()) * 2)\n",
    "cpp": "#include <cstdio>\nint main() { long long n; if (scanf(\"%lld\", &n) != 1) return 1; "
           "printf(\"%lld\\n\", 2 * n); return 0; }\n",
}
DOUBLING = TestSuite((StdioCase("one", b"21\n", (b"42\n",)), StdioCase("two", b"-5\n", (b"-10\n",))))


@pytest.fixture(scope="module")
def pool():
    """The default pool, replaced for this module by one that keeps a single idle sandbox."""
    saved = pool_module._default
    pool_module._default = SandboxPool(max_sandboxes=2, max_idle_per_key=1, spares=0)
    yield pool_module._default
    pool_module._default.close()
    pool_module._default = saved


def _settled(pool: SandboxPool, before: dict) -> dict:
    """The pool's stats once A's sandbox is back (recycled: idle) or closed (discarded)."""
    deadline = time.monotonic() + 120
    while True:
        st = pool.stats()
        if st["busy"] == 0 and (st["idle"] == 1 or st["discarded"] > before["discarded"]):
            return st
        assert time.monotonic() < deadline, st
        time.sleep(0.01)


def _then_honest(pool: SandboxPool, task_a: Task, honest: Task) -> None:
    before = pool.stats()
    a = judge(task_a)
    assert a.outcome is not Outcome.SANDBOX_ERROR, a.reason
    st = _settled(pool, before)
    assert st["discarded"] == before["discarded"], "A's sandbox was not reusable"
    b = judge(honest)
    after = pool.stats()
    assert b.outcome is Outcome.AC, (b.reason, [(c.name, c.outcome, c.detail) for c in b.cases])
    assert after["reused"] == st["reused"] + 1 and after["started"] == st["started"]  # A's sandbox


@pytest.mark.parametrize("path", PROGRAMS, ids=[f"{p.parent.name}/{p.stem}" for p in PROGRAMS])
def test_hostile_then_honest_on_the_same_sandbox(path: Path, pool, tmp_path):
    meta = parse_header(path)
    stdin = b"9\n"
    if meta.get("stdin") == "secret-paths" or path.stem == "read_secrets":
        secret = tmp_path / "expected_output.txt"
        secret.write_text("EXPECTED-ANSWER 42\n")
        stdin = f"{secret} {Path(__file__).resolve()}\n".encode()
    language = "cpp" if path.suffix == ".cpp" else "python"
    limits = limits_from(meta)
    hostile = Task(language, path.read_text(), TestSuite((StdioCase("a", stdin, (b"x\n",)),)),
                   limits=limits, compile=CPP_COMPILE)
    honest = Task(language, HONEST[language], DOUBLING, limits=limits, compile=CPP_COMPILE)
    _then_honest(pool, hostile, honest)


@pytest.mark.parametrize("path", cheats.CHEAT_FILES, ids=[p.stem for p in cheats.CHEAT_FILES])
def test_cheat_then_honest_on_the_same_sandbox(path: Path, pool):
    meta = cheats.header(path)
    suite = cheats.TASKS[meta["task"]]
    lim = Limits(cpu_seconds=2, output_bytes=1 << 20)
    cheat = Task("python", path.read_text(), suite, limits=lim, checker=CheckerSpec("tokens"), run_all=True)
    honest_source = (cheats.CHEATS / f"correct_{meta['task']}.py").read_text()
    honest = Task("python", honest_source, suite, limits=lim, checker=CheckerSpec("tokens"), run_all=True)
    _then_honest(pool, cheat, honest)
