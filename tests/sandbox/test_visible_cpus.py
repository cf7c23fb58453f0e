"""A program is told the same number of online CPUs on every host (docs/sandbox.md, LIMITS).

Without it ``os.cpu_count()`` in a case was the host's cores: ``multiprocessing.Pool()`` on a 128-core
node starts 128 workers, past a case's ``processes`` limit (RE) or its memory limit (MLE), while the
same correct program is AC on a small node.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.sandbox import bwrap
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.pool import default_pool
from arbiter.sandbox.sandbox import Sandbox

COUNTS = "import os\nprint(os.cpu_count(), open('/sys/devices/system/cpu/online').read().strip())\n"
POOL = """import multiprocessing as mp
def square(x):
    return x * x
if __name__ == "__main__":
    with mp.Pool() as pool:
        print(pool._processes, sum(pool.map(square, range(1000))))
"""
HARDWARE = ('#include <thread>\n#include <cstdio>\n#include <unistd.h>\nint main(){printf("%u %ld\\n",'
            ' std::thread::hardware_concurrency(), sysconf(_SC_NPROCESSORS_ONLN));}\n')


def test_the_shipped_view_is_two_cpus_anyone_may_read():
    assert Path(bwrap.CPU_ONLINE_FILE).read_text() == f"0-{bwrap.VISIBLE_CPUS - 1}\n"
    assert os.stat(bwrap.CPU_ONLINE_FILE).st_mode & 0o044 == 0o044


def test_every_program_sees_the_same_cpu_count():
    comp = compile_cpp(HARDWARE, CompileSpec(command="g++ -O2 main.cpp -o main"))
    assert comp.ok, comp.message
    with Sandbox(files={"main": comp.binary}) as sb:
        assert sb.load_python(COUNTS) is None
        ex = sb.run_python(b"")
        assert ex.ok and ex.stdout.split() == [str(bwrap.VISIBLE_CPUS).encode(), b"0-1"], ex
        ex = sb.run(["/prog/main"], b"")
        assert ex.ok and ex.stdout.split() == [str(bwrap.VISIBLE_CPUS).encode()] * 2, ex


def test_a_default_pool_fits_the_limits():
    with Sandbox(limits=Limits(cpu_seconds=10)) as sb:
        assert sb.load_python(POOL) is None
        ex = sb.run_python(b"")
    assert ex.ok and ex.stdout == b"2 332833500\n", (ex.status, ex.stdout, ex.stderr[-300:])


def _with_view(text: str, program: str, mode: int = 0o644) -> dict:
    """``program``'s run in a sandbox shown ``text`` as its online CPUs (a file of ``mode``): the
    status and stdout, or the error that refused the sandbox. In a child process, so that no pooled
    sandbox of this one ever starts with the patched view."""
    folder = Path(tempfile.mkdtemp(prefix="arbiter-cpus-", dir="/var/tmp"))
    try:
        os.chmod(folder, 0o755)
        online = folder / "online"
        online.write_text(text)
        online.chmod(mode)
        script = textwrap.dedent(f"""
            import json
            from arbiter.sandbox import bwrap
            from arbiter.sandbox.errors import SandboxError
            from arbiter.sandbox.limits import Limits
            from arbiter.sandbox.sandbox import Sandbox
            bwrap.CPU_ONLINE_FILE = {str(online)!r}
            try:
                with Sandbox(limits=Limits(cpu_seconds=10)) as sb:
                    assert sb.load_python({program!r}) is None
                    ex = sb.run_python(b"")
                print(json.dumps({{"status": ex.status.name, "stdout": ex.stdout.decode()}}))
            except SandboxError as exc:
                print(json.dumps({{"error": str(exc)}}))
            """)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_count_comes_from_the_sandbox_not_the_host():
    """Another file at the same place gives another count: what a case sees is the sandbox's."""
    assert _with_view("0-6\n", COUNTS) == {"status": "OK", "stdout": "7 0-6\n"}


def test_a_default_pool_on_a_large_node_view_is_refused():
    """What a 96-core node showed before: ``Pool()`` needs more tasks than ``processes`` allows."""
    got = _with_view("0-95\n", POOL)
    assert got["status"] == "RUNTIME_ERROR", got


def test_an_unreadable_view_refuses_the_sandbox():
    """(Red team 9) the C library ignores an online file it cannot read and counts the host's CPUs:
    the sandbox does not start instead."""
    got = _with_view("0-6\n", COUNTS, mode=0o600)
    assert "not readable by everyone" in got.get("error", ""), got


TAMPER = r'''import os, ctypes
P = "/sys/devices/system/cpu/online"
libc = ctypes.CDLL(None, use_errno=True)
open("/tmp/fake", "w").write("0-127\n")
changed = []
def attempt(name, f):
    try:
        r = f()
    except OSError:
        return
    if r not in (None, -1):
        changed.append(name)
def m(src, tgt, fs, flags):
    return libc.mount(src, tgt, fs, ctypes.c_ulong(flags), None)
attempt("write", lambda: open(P, "w").write("0-127\n") and 0)
attempt("append", lambda: open(P, "a").write("0-127\n") and 0)
attempt("chmod", lambda: os.chmod(P, 0o666) or 0)
attempt("unlink", lambda: os.unlink(P) or 0)
attempt("rename", lambda: os.rename(P, "/sys/devices/system/cpu/x") or 0)
attempt("bind", lambda: m(b"/tmp/fake", P.encode(), None, 4096))
attempt("remount", lambda: m(None, P.encode(), None, 32 | 4096))
attempt("tmpfs", lambda: m(b"none", b"/sys", b"tmpfs", 0))
attempt("sysfs", lambda: m(b"sysfs", b"/sys", b"sysfs", 0))
attempt("umount", lambda: libc.umount2(P.encode(), 2))
attempt("umount_sys", lambda: libc.umount2(b"/sys", 2))
n = int(input())
print(n * 2 if not changed and os.cpu_count() == 2 and open(P).read() == "0-1\n" else changed)
'''
CHECK_PY = ("import os\nn = int(input())\nprint(n * 2 if os.cpu_count() == 2 and "
            "open('/sys/devices/system/cpu/online').read() == '0-1\\n' else os.cpu_count())\n")
CHECK_CPP = r'''#include <cstdio>
#include <thread>
#include <unistd.h>
#include <sys/sysinfo.h>
int main(){ int n; if (scanf("%d", &n) != 1) return 1;
  bool ok = std::thread::hardware_concurrency() == 2 && sysconf(_SC_NPROCESSORS_ONLN) == 2
            && sysconf(_SC_NPROCESSORS_CONF) == 2 && get_nprocs() == 2 && get_nprocs_conf() == 2;
  printf("%d\n", ok ? n * 2 : -1); }
'''
SUITE = TestSuite(tuple(StdioCase(f"c{i}", f"{i}\n".encode(), (f"{2 * i}\n".encode(),)) for i in (1, 2, 3)))


def test_a_submission_cannot_change_what_a_later_one_sees():
    """(Red team 9) a submission tries every way to change the file (write, chmod, unlink, rename, a
    mount over it or over /sys, remount, umount): it, later cases and later submissions on the
    reused sandboxes still see two CPUs, Python and C++ (``_SC_NPROCESSORS_CONF`` too)."""
    before = dict(default_pool().counts)
    for _ in range(2):
        for task in (Task("python", TAMPER, SUITE, run_all=True), Task("python", CHECK_PY, SUITE, run_all=True),
                     Task("cpp", CHECK_CPP, SUITE, run_all=True)):
            v = judge(task)
            assert v.outcome is Outcome.AC, (v.outcome, v.reason, [(c.name, c.outcome.value, c.detail) for c in v.cases])
    assert default_pool().counts["reused"] > before["reused"]  # the pooled path was exercised
