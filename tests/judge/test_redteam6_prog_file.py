"""Red team 6: ``/prog/main.py`` as a Python program's ``__file__`` (ccd2493) and the session
server's capabilities dropped at arm (e8b070d).

What held: /prog/main.py cannot be changed by a case (every write, rename, mount path fails), and
every process that runs submission code (the case, fork/spawn children, exec'd children; a
forkserver sends descriptors, which no case may since, docs/sandbox.md) has no capability, no_new_privs, two seccomp filters and the counters denied, in the
first and in reused sessions. What did not: the early load raced the session's own files (a
spawn pool's TLE 1 in 150 on reused sandboxes; fixed), and spawn children never run the prelude.
"""

from __future__ import annotations

import json

import pytest

from arbiter.judge.judge import judge
from arbiter.judge.preludes import PYTHON_PRELUDE
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.limits import Limits
from session_pairs import wait_idle






def test_file_is_prog_main_py_in_every_reused_session(one_sandbox_pool):
    """The session's files are written before an early load is handed to the blank forker, which
    reads /prog/main.py (red team 6: __file__ was /work/main.py in about 1 of 100 reused
    sessions, 3 of 100 with a non-default scratch size, when the two raced)."""
    wrong = []
    for i in range(300):
        v = judge(Task("python", f"print(__file__)  # {i}\n",
                       TestSuite((StdioCase("a", b"", (b"/prog/main.py\n",)),)),
                       limits=Limits(scratch_bytes=64 << 20)))
        if v.outcome is not Outcome.AC:
            wrong.append((i, v.reason))
        wait_idle(one_sandbox_pool)
    assert one_sandbox_pool.stats()["reused"] >= 299
    assert not wrong, wrong


_SPAWN_USING_PRELUDE = ("import multiprocessing as mp\ninput = sys.stdin.readline\n"
                        "def sq(x):\n    return x * x\n"
                        "if __name__ == '__main__':\n    n = int(input())\n"
                        "    with mp.get_context('spawn').Pool(2) as p:\n        print(sum(p.map(sq, range(n))))\n")


@pytest.mark.xfail(strict=True, reason="a spawn child runs /prog/main.py without the prelude: a name the "
                   "prelude binds (sys here) is a NameError in every worker, the pool respawns them: TLE")
def test_spawn_pool_of_a_program_using_prelude_names():
    from arbiter.verl.reward import compute_score
    gt = json.dumps({"inputs": ["4\n", "3\n"], "outputs": ["14\n", "5\n"]})
    r = compute_score("codecontests", f"```python\n{_SPAWN_USING_PRELUDE}```", gt)
    assert r["score"] == 1.0, r


@pytest.mark.xfail(strict=True, reason="LeetCode-style List[int] annotation (bound by the prelude) is a "
                   "NameError in a spawn child: TLE")
def test_call_mode_solution_with_a_spawn_pool_and_list_annotations():
    src = ("import multiprocessing as mp\ndef sq(x):\n    return x * x\nclass Solution:\n"
           "    def total(self, nums: List[int]) -> int:\n"
           "        with mp.get_context('spawn').Pool(2) as p:\n            return sum(p.map(sq, nums))\n")
    suite = TestSuite((CallCase("a", "total", ([1, 2, 3],), expected=(14,)),))
    v = judge(Task("python", src, suite, limits=Limits(cpu_seconds=3, wall_seconds=6), prelude=PYTHON_PRELUDE))
    assert v.outcome is Outcome.AC, v.reason


_TAMPER = r'''
import os, ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
P = "/prog/main.py"
def att(fn):
    try:
        r = fn()
    except OSError:
        return "no"
    return "YES"
def c(rc):
    if rc != 0:
        raise OSError(ctypes.get_errno(), "")
open("/work/evil.py", "w").write("print('EVIL')\n")
fd = os.open(P, os.O_RDONLY)
tries = [lambda: open(P, "a"), lambda: os.chmod(P, 0o777), lambda: os.utime(P, (0, 0)),
         lambda: os.rename(P, "/prog/x.py"), lambda: os.rename("/work/evil.py", P), lambda: os.unlink(P),
         lambda: open("/prog/new.py", "w"), lambda: os.truncate(P, 0), lambda: os.setxattr(P, "user.x", b"1"),
         lambda: open("/proc/1/root/prog/main.py", "a"), lambda: open("/proc/self/fd/%d" % fd, "r+"),
         lambda: c(libc.mount(b"/work/evil.py", P.encode(), None, ctypes.c_ulong(4096), None)),
         lambda: c(libc.mount(None, b"/prog", None, ctypes.c_ulong(32), None)),
         lambda: c(libc.umount2(b"/prog", 2)), lambda: c(libc.unshare(0x10000000)), lambda: c(libc.unshare(0x20000))]
print(input(), [att(t) for t in tries].count("YES"), "MARK" in open(__file__).read())
# MARK
'''


def test_a_case_cannot_change_prog_main_py(one_sandbox_pool):
    suite = TestSuite(tuple(StdioCase(str(k), f"{k}\n".encode(), (f"{k} 0 True\n".encode(),)) for k in range(3)))
    for i in range(3):
        v = judge(Task("python", _TAMPER + f"# {i}\n", suite))
        assert v.outcome is Outcome.AC, v.reason
        wait_idle(one_sandbox_pool)


_PROBE = r'''
import os, ctypes, socket, subprocess, sys, multiprocessing as mp
def probe(_=None):
    st = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
    st = {k: v.strip() for k, v in st.items()}
    ok = all(st[k] == "0000000000000000" for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"))
    ok = ok and st["NoNewPrivs"] == "1" and st["Seccomp"] == "2" and st["Seccomp_filters"] == "2"
    libc = ctypes.CDLL(None, use_errno=True)
    pid = os.fork()
    if pid == 0:
        os._exit(0 if libc.setsid() != -1 else ctypes.get_errno())
    ok = ok and os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 1
    ok = ok and libc.inotify_init1(0) == -1 and ctypes.get_errno() == 1
    s = socket.socket(socket.AF_UNIX)
    for opt in (57, 71):
        try:
            s.getsockopt(socket.SOL_SOCKET, opt, 8)
            ok = False
        except PermissionError:
            pass
    return ok
if __name__ == "__main__":
    out = [probe()]
    for m in ("fork", "spawn"):
        with mp.get_context(m).Pool(1) as p:
            out.append(p.apply(probe))
    sh = subprocess.run(["/bin/sh", "-c", "grep -E '^(Cap|NoNewPrivs|Seccomp_filters)' /proc/self/status"],
                        capture_output=True, text=True).stdout.split()
    out.append(sh.count("0000000000000000") == 5 and sh[sh.index("NoNewPrivs:") + 1] == "1"
               and sh[sh.index("Seccomp_filters:") + 1] == "2")
    print(input(), out.count(True), len(out))
'''

_CPP_PROBE = r'''
#include <bits/stdc++.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/inotify.h>
#include <sys/socket.h>
int main() {
    std::ifstream f("/proc/self/status"); std::string l; int zero = 0; bool ok = true;
    while (std::getline(f, l)) {
        if (l.rfind("Cap", 0) == 0) zero += l.find("0000000000000000") != std::string::npos;
        if (l.rfind("NoNewPrivs:", 0) == 0) ok = ok && l.back() == '1';
        if (l.rfind("Seccomp_filters:", 0) == 0) ok = ok && l.substr(l.size() - 2) == "\t2";
    }
    pid_t p = fork();
    if (p == 0) _exit(setsid() == -1 ? errno : 0);
    int ws; waitpid(p, &ws, 0); ok = ok && WEXITSTATUS(ws) == EPERM;
    ok = ok && inotify_init1(0) == -1 && errno == EPERM;
    int s = socket(AF_UNIX, SOCK_STREAM, 0); unsigned long long v; socklen_t n = 8;
    ok = ok && getsockopt(s, SOL_SOCKET, 57, &v, &n) == -1 && errno == EPERM;
    ok = ok && getsockopt(s, SOL_SOCKET, 71, &v, &n) == -1 && errno == EPERM;
    std::string x; std::cin >> x;
    std::cout << x << " " << zero << " " << ok << "\n";
}
'''


def test_no_capability_in_any_process_of_first_and_reused_sessions(one_sandbox_pool):
    lim = Limits(cpu_seconds=5, wall_seconds=15)
    py = TestSuite(tuple(StdioCase(str(k), f"{k}\n".encode(), (f"{k} 4 4\n".encode(),)) for k in range(2)))
    cpp = TestSuite(tuple(StdioCase(str(k), f"{k}\n".encode(), (f"{k} 5 1\n".encode(),)) for k in range(2)))
    for i in range(6):
        if i % 3 == 2:
            v = judge(Task("cpp", _CPP_PROBE + f"// {i}\n", cpp, limits=lim))
        else:
            v = judge(Task("python", _PROBE + f"# {i}\n", py, limits=lim))
        assert v.outcome is Outcome.AC, (i, v.reason)
        wait_idle(one_sandbox_pool)
    assert one_sandbox_pool.stats()["reused"] == 5
