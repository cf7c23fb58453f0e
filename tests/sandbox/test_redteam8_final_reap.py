"""Red team 8: the session's last ("final") Python case and the reap after its reply
(forked_case.reap_ended and _end_forked_case through _reap_sparing, 8c9a6f0).

A final case is reported once its program ended; what it left is killed, and reaped after the
reply. The hardest leftover is one only the forker can reap: a sibling of the case made by
clone(CLONE_PARENT), a zombie or still running (then the forker is killed too). These attacks
check that nothing of it reaches the next run of the session or the next session of the pooled
sandbox: no process, no file, no CPU or memory charged to the next program, no verdict changed.
"""

from __future__ import annotations

import pytest

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox

#: Input "0": print the answer. "zombie": leave a sibling (child of the forker) that exits at once:
#: a zombie only the forker could reap. "live": a sibling that burns CPU, grows to 200 MiB and
#: writes /tmp and /dev/shm forever. "both": the two, and a grandchild of the sibling's.
#: (The main prints first and exits 0 at once: the report is early.)
LEAVER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None)
how = sys.stdin.read().strip()
print(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')), len([p for p in os.listdir('/proc') if p.isdigit()]), flush=True)

def sibling():
    return libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0)  # clone(CLONE_PARENT|SIGCHLD): 0 in the sibling

if how in ("zombie", "both"):
    if sibling() == 0:
        os._exit(0)
if how in ("live", "both"):
    r, w = os.pipe()
    if sibling() == 0:
        if how == "both" and os.fork() == 0:
            os.setsid()
        x = bytearray(200 << 20)
        x[::4096] = b"1" * len(x[::4096])
        os.write(w, b"x")
        i = 0
        while True:
            i += 1
            for d in ("/tmp", "/dev/shm"):
                try:
                    open("%s/left%d" % (d, i % 20), "w").write("x")
                except OSError:
                    pass
    os.read(r, 1)
"""

SPY_PATTERN = b"[] [] "


def _count(ex):
    return int(ex.stdout.split()[-1])


@pytest.mark.parametrize("how", ["zombie", "live", "both"])
def test_a_final_case_leaving_a_sibling_of_itself_leaves_the_next_run_clean(how):
    lim = Limits(cpu_seconds=3, wall_seconds=6, memory_bytes=512 * MiB, processes=16)
    with Sandbox(limits=lim) as sb:
        assert sb.load_python(LEAVER) is None
        base = sb.run_python(b"0", lim)
        first = sb.run_python(how.encode(), lim, last=True)
        second = sb.run_python(b"0", lim)
        left = sb.stray_processes()
        sb.end_session()
        sb.new_session(limits=lim)
        assert sb.load_python(LEAVER) is None
        third = sb.run_python(b"0", lim)
        left_after = sb.stray_processes()
    assert base.status is Status.OK and base.stdout.startswith(SPY_PATTERN), base
    assert first.status is Status.OK, (first.status, first.stderr[-300:])
    if how != "zombie":  # the sibling's 200 MiB were held while the case ran: charged to it, not hidden
        assert first.peak_memory_bytes >= 200 * MiB, first.peak_memory_bytes
    for ex in (second, third):
        assert ex.status is Status.OK and ex.stdout.startswith(SPY_PATTERN), (ex.status, ex.stdout, ex.stderr[-300:])
        assert _count(ex) == _count(base), (base.stdout, ex.stdout)
        assert ex.peak_memory_bytes < 150 * MiB and ex.cpu_seconds < 1.0, (ex.peak_memory_bytes, ex.cpu_seconds)
    assert left == [] and left_after == []


def test_a_final_case_sibling_changes_no_verdict_of_the_next_pooled_submission(one_sandbox_pool):
    """A judged submission whose last case leaves a CPU-burning, memory-holding sibling; the next
    submission on the pool's only sandbox (tight CPU and memory) is AC with its own figures."""
    bad = LEAVER.replace("how = sys.stdin.read().strip()", "how = 'both' if sys.stdin.read().strip() == 'b' else '0'")
    lim = Limits(cpu_seconds=2, wall_seconds=4, memory_bytes=512 * MiB, processes=16)
    suite = TestSuite((StdioCase("a", b"a", (b"x\n",)), StdioCase("b", b"b", (b"x\n",))))
    v = judge(Task("python", bad, suite, limits=lim, checker=CheckerSpec("tokens"), run_all=True))
    assert [c.outcome for c in v.cases] == [Outcome.WA, Outcome.WA], v  # (its output is the spy's line)
    spy = ("import os\n"
           "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')), "
           "len([p for p in os.listdir('/proc') if p.isdigit()]))\n")
    tight = Limits(cpu_seconds=1, wall_seconds=2, memory_bytes=64 * MiB)
    first = judge(Task("python", spy, TestSuite((StdioCase("a", b"", (b"x\n",)),)), limits=tight,
                       checker=CheckerSpec("tokens"), run_all=True))
    assert first.cases[0].outcome is Outcome.WA, first  # the spy's own line, compared below
    clean = judge(Task("python", spy, TestSuite((StdioCase("a", b"", (b"x\n",)),)), limits=tight,
                       checker=CheckerSpec("tokens"), run_all=True))
    seen = [first.cases[0], clean.cases[0]]
    assert all("left" not in (c.detail + str(c.diff)) for c in seen), [(c.detail, c.diff) for c in seen]
    assert seen[0].cpu_seconds < 0.5 and seen[0].memory_bytes < 64 * MiB, seen[0]
    ok = judge(Task("python", "print(sum(range(10**6)))\n", TestSuite((StdioCase("a", b"", (b"499999500000\n",)),)),
                    limits=tight, checker=CheckerSpec("tokens")))
    assert ok.outcome is Outcome.AC, ok


def test_a_final_call_case_with_a_sibling_keeps_its_result_and_the_next_call_is_clean():
    src = LEAVER.split("how = ")[0] + (
        "def sibling():\n"
        "    return libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0)\n"
        "class Solution:\n"
        "    def f(self, x):\n"
        "        if x and sibling() == 0:\n"
        "            while True:\n"
        "                open('/tmp/left', 'w').write('x')\n"
        "        return [sorted(os.listdir('/tmp')), x + 1]\n")
    lim = Limits(cpu_seconds=2, wall_seconds=4, processes=16)
    with Sandbox(limits=lim) as sb:
        assert sb.load_python(src) is None
        first = sb.call_python("f", [1], limits=lim, last=True)
        second = sb.call_python("f", [0], limits=lim)
        left = sb.stray_processes()
    assert first.ok and first.result is not None, (first.status, first.stderr[-300:])
    assert second.ok and "left" not in str(second.result), second.result
    assert left == []


@pytest.mark.parametrize("how", ["0", "zombie", "live", "both"])
def test_the_final_case_is_the_forker_itself_and_a_later_case_gets_a_new_one(how):
    """Which reap the tests above went through: the session's last case is run by the forker
    itself (guest/inplace_case.py), so its parent is the server (PID 1) and a sibling it leaves
    (``CLONE_PARENT``) is the server's child, reaped by the server (reap_ended, no forker to
    spare); a case after it (the judge never sends one, the API allows it) gets a new forker."""
    src = LEAVER.replace("print(sorted(", "print(os.getppid(), sorted(")
    lim = Limits(cpu_seconds=3, wall_seconds=6, memory_bytes=512 * MiB, processes=16)
    with Sandbox(limits=lim) as sb:
        assert sb.load_python(src) is None
        runs = [sb.run_python(b"0", lim), sb.run_python(how.encode(), lim, last=True), sb.run_python(b"0", lim)]
    assert all(ex.status is Status.OK for ex in runs), runs
    before, during, after = (int(ex.stdout.split()[0]) for ex in runs)
    assert during == 1 and before != 1, (before, during)
    assert after not in (1, before), (how, before, after)


#: CPU spent out of the main process: a waited child, or an orphaned grandchild while the main
#: sleeps until it is done; each burns 1.6 s of its own CPU under a 1 s CPU limit (its own CPU,
#: not wall time: on a loaded host a second of wall time is less than a second of CPU).
HIDE_CPU = r"""
import os, sys, time
how = sys.stdin.read().strip()
def spin():
    while time.process_time() < 1.6:
        pass
    open("/tmp/burnt", "w").close()
if how == "child":
    pid = os.fork()
    if pid == 0:
        spin()
        os._exit(0)
    os.waitpid(pid, 0)
elif how == "grandchild":
    if os.fork() == 0:
        if os.fork() == 0:
            spin()
            os._exit(0)
        os._exit(0)
    while not os.path.exists("/tmp/burnt"):
        time.sleep(0.01)
print("done")
"""


@pytest.mark.parametrize("how", ["child", "grandchild"])
def test_cpu_burnt_outside_the_main_process_is_tle_when_final_too(how):
    lim = Limits(cpu_seconds=1, wall_seconds=12, processes=8)
    got = []
    for last in (False, True):
        with Sandbox(limits=lim) as sb:
            assert sb.load_python(HIDE_CPU) is None
            got.append(sb.run_python(how.encode(), lim, last=last))
    assert [ex.status for ex in got] == [Status.TIME_LIMIT] * 2, [(ex.status, ex.cpu_seconds) for ex in got]
