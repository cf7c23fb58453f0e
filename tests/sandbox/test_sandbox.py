"""The executor API itself: one-shot runs, limits, cgroup hygiene."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from arbiter.sandbox import cgroups
from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox, run


def test_one_shot_run_with_files():
    ex = run(["/bin/sh", "/prog/script.sh"], b"hello\n", files={"script.sh": b"read x; echo \"got $x\"; echo err >&2"})
    assert ex.status is Status.OK
    assert ex.stdout == b"got hello\n" and ex.stderr == b"err\n"
    assert ex.exit_code == 0 and ex.signal is None and ex.wall_seconds > 0


def test_output_is_capped_and_flagged():
    with Sandbox() as sb:
        ex = sb.run(["/bin/sh", "-c", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2"],
                    limits=Limits(output_bytes=100_000, stderr_bytes=1000))
        assert ex.status is Status.OUTPUT_LIMIT
        assert len(ex.stdout) == 100_000 and ex.stdout_truncated


def test_compiled_file_survives_only_when_kept():
    with Sandbox() as sb:
        sb.run(["/bin/sh", "-c", "echo a > kept; echo b > dropped"], keep=["kept"])
        assert sb.fetch("kept") == b"a\n"
        assert sb.fetch("dropped") is None


def test_stale_groups_of_dead_judges_are_pruned():
    ok, why = cgroups.available()
    if not ok:
        import pytest
        pytest.skip(why)
    # a judge that dies without closing its sandbox leaves its groups behind
    code = ("import os, sys; from arbiter.sandbox.sandbox import Sandbox; sb = Sandbox(); "
            "import json; print(json.dumps([str(p) for p in sb.cgroup_dirs])); sys.stdout.flush(); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    import json

    leftovers = json.loads(out.stdout.strip())
    from pathlib import Path
    assert leftovers and all(Path(p).exists() for p in leftovers)
    # the next judge process prunes them when it makes its first sandbox
    code = "from arbiter.sandbox.sandbox import Sandbox\nwith Sandbox() as sb: pass\n"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert not any(Path(p).exists() for p in leftovers)


def test_heavy_stderr_is_kept_head_and_tail_and_never_fails_the_run():
    with Sandbox() as sb:
        ex = sb.run(["/bin/sh", "-c", "echo first >&2; head -c 5000000 /dev/zero | tr '\\0' x >&2; echo last >&2; echo ok"],
                    limits=Limits(output_bytes=1 << 20, stderr_bytes=1000))
        assert ex.status is Status.OK and ex.stdout == b"ok\n"
        assert ex.stderr.startswith(b"first\n") and ex.stderr.endswith(b"last\n") and ex.stderr_truncated
        assert len(ex.stderr) == 1000


def test_input_and_output_are_not_charged_to_the_programs_memory():
    """Contest judges charge a program for its own memory: a 100 MB input read by a program that
    keeps almost nothing fits in a 64 MiB limit, and so does its output up to
    ``meter.OUTPUT_ALLOWANCE`` (4 MiB); beyond that the output counts (which part of it was in
    stdout at the peak is not known: tests/judge/test_memory_left_behind.py). The input is 100 K
    lines of 1 KiB: reading it line by line costs milliseconds (52 M short lines took 3.45 s of
    CPU on a slow machine, against the 2 s limit)."""
    from arbiter.sandbox.meter import OUTPUT_ALLOWANCE, RECLAIMABLE_SLACK

    lines = 100 << 10
    big = (b"1" * 1023 + b"\n") * lines
    with Sandbox(limits=Limits(memory_bytes=64 << 20, output_bytes=64 << 20)) as sb:
        reader = sb.run(["/bin/sh", "-c", "wc -l"], big)
        assert reader.status is Status.OK and reader.stdout.strip() == str(lines).encode()
        assert reader.peak_memory_bytes < 16 << 20, reader.peak_memory_bytes
        small = sb.run(["/bin/sh", "-c", "head -c %d /dev/zero" % OUTPUT_ALLOWANCE])
        assert small.status is Status.OK and len(small.stdout) == OUTPUT_ALLOWANCE
        assert small.peak_memory_bytes < 2 << 20, small.peak_memory_bytes
        writer = sb.run(["/bin/sh", "-c", "head -c 60000000 /dev/zero"])
        assert writer.status is Status.OK and len(writer.stdout) == 60_000_000
        # a peak may be up to RECLAIMABLE_SLACK low (docs/sandbox.md, "Memory": memory in the
        # baseline the kernel frees while the run runs; 105 KB in one CI run)
        low = 60_000_000 - OUTPUT_ALLOWANCE - RECLAIMABLE_SLACK
        assert low <= writer.peak_memory_bytes < 60_000_000, writer.peak_memory_bytes
        # the output's memfd is freed before the reply's last byte: the next run's baseline
        # does not hold it (if it did, the hog below would get its 60 MB back as room)
        assert sb.meter.cg.memory_usage() < 40 << 20, sb.meter.cg.memory_usage()
        hog = sb.run(["/usr/bin/python3", "-c", "x = bytearray(100 << 20)"])
        assert hog.status is Status.MEMORY_LIMIT
        assert sb.load_python("import sys\nprint(sum(1 for _ in sys.stdin.buffer))\n") is None
        py = sb.run_python(big)
        assert py.ok and py.stdout == str(lines).encode() + b"\n", py
        assert sb.load_python("import sys\nprint(len(sys.stdin.buffer.read()))\n") is None
        assert sb.run_python(big).status is Status.MEMORY_LIMIT  # holding the input is its memory


@pytest.mark.parametrize("sizes", [(1 << 20, 100), (1 << 20, 0), (100, 0), (0, 3000)])
def test_a_reply_closes_its_files_before_its_last_byte(sizes):
    """The judge measures the next run as soon as it has a whole reply: a run's stdout memfd
    still open then was in that run's baseline and freed while it ran (a 100 MiB hog after a
    60 MB output came back OK under 64 MiB). The guest closes the files it streams before it
    writes the reply's last byte; the judge's side here checks at that byte, not later."""
    import os
    import threading

    from arbiter.sandbox.guest.protocol import read_frame_blocking
    from arbiter.sandbox.guest.reply import reply_with_fds
    from arbiter.sandbox.guest.state import ServerState

    out_size, err_size = sizes
    out = os.memfd_create("stdout", os.MFD_CLOEXEC)
    os.write(out, b"o" * out_size)
    ino = os.fstat(out).st_ino
    r, w = os.pipe()
    got = {}

    def judge():
        got["frame"] = read_frame_blocking(r)
        try:  # (nothing else opens files meanwhile: the number is not reused)
            got["open"] = os.fstat(out).st_ino == ino
        except OSError:
            got["open"] = False

    reader = threading.Thread(target=judge)
    reader.start()
    state = ServerState(-1, w, True)
    state.request_id = 7
    reply_with_fds(state, {"op": "run"}, [(out, out_size), b"e" * err_size])
    reader.join()
    os.close(r)
    os.close(w)
    header, blobs = got["frame"]
    assert header["id"] == 7 and blobs == [b"o" * out_size, b"e" * err_size]
    assert got["open"] is False


def test_file_size_limit_is_separate_from_the_stdout_cap():
    lim = Limits(output_bytes=1 << 20, file_bytes=8 << 20)
    with Sandbox(limits=lim) as sb:
        ok = sb.run(["/bin/sh", "-c", "head -c 4000000 /dev/zero > /work/f && wc -c < /work/f"])
        assert ok.status is Status.OK and ok.stdout.strip() == b"4000000"
        big = sb.run(["/bin/sh", "-c", "exec head -c 9000000 /dev/zero > /work/f"])
        assert big.status is Status.OUTPUT_LIMIT
        flood = sb.run(["/bin/sh", "-c", "head -c 2000000 /dev/zero"])
        assert flood.status is Status.OUTPUT_LIMIT and len(flood.stdout) == 1 << 20


def test_a_fork_bomb_cannot_starve_another_sandbox_into_a_wall_time_limit():
    """Each sandbox is its own CPU group (1.2 cores at most, equal shares): a neighbour spinning 60
    processes leaves an honest program its share, so it ends well within its wall limit."""
    import threading

    bomb = "import os\nfor _ in range(60):\n    if os.fork() == 0:\n        break\nwhile True:\n    pass\n"
    honest = "s = 0\nfor i in range(3_000_000):\n    s += i\nprint(s)\n"
    results = {}
    with Sandbox(limits=Limits(cpu_seconds=4, wall_seconds=4)) as a, \
            Sandbox(limits=Limits(cpu_seconds=2, wall_seconds=3)) as b:
        assert a.load_python(bomb) is None and b.load_python(honest) is None
        t = threading.Thread(target=lambda: results.setdefault("bomb", a.run_python()))
        t.start()
        import time
        time.sleep(0.5)  # the bomb is spinning
        results["honest"] = b.run_python()
        t.join()
    assert results["honest"].status is Status.OK, results["honest"]
    assert results["honest"].stdout == str(sum(range(3_000_000))).encode() + b"\n"
    assert results["bomb"].status is Status.TIME_LIMIT


STDIO_REPORT = """\
import sys
for s in (sys.stdin, sys.stdout, sys.stderr):
    b = s.buffer
    print(s.name, s.mode, s.encoding, s.errors, s.line_buffering, type(b).__name__, b.name, b.mode,
          type(b.raw).__name__, b.raw.name, b.raw.mode, b.raw.closefd, s.fileno())
"""

PYRIVAL_FASTIO = """\
import os
import sys
from io import BytesIO, IOBase

BUFSIZE = 8192


class FastIO(IOBase):
    newlines = 0

    def __init__(self, file):
        self._fd = file.fileno()
        self.buffer = BytesIO()
        self.writable = "x" in file.mode or "r" not in file.mode
        self.write = self.buffer.write if self.writable else None

    def read(self):
        while True:
            b = os.read(self._fd, max(os.fstat(self._fd).st_size, BUFSIZE))
            if not b:
                break
            ptr = self.buffer.tell()
            self.buffer.seek(0, 2), self.buffer.write(b), self.buffer.seek(ptr)
        self.newlines = 0
        return self.buffer.read()

    def readline(self):
        while self.newlines == 0:
            b = os.read(self._fd, max(os.fstat(self._fd).st_size, BUFSIZE))
            self.newlines = b.count(b"\\n") + (not b)
            ptr = self.buffer.tell()
            self.buffer.seek(0, 2), self.buffer.write(b), self.buffer.seek(ptr)
        self.newlines -= 1
        return self.buffer.readline()

    def flush(self):
        if self.writable:
            os.write(self._fd, self.buffer.getvalue())
            self.buffer.truncate(0), self.buffer.seek(0)


class IOWrapper(IOBase):
    def __init__(self, file):
        self.buffer = FastIO(file)
        self.flush = self.buffer.flush
        self.writable = self.buffer.writable
        self.write = lambda s: self.buffer.write(s.encode("ascii"))
        self.read = lambda: self.buffer.read().decode("ascii")
        self.readline = lambda: self.buffer.readline().decode("ascii")


sys.stdin, sys.stdout = IOWrapper(sys.stdin), IOWrapper(sys.stdout)
input = lambda: sys.stdin.readline().rstrip("\\r\\n")


def main():
    n = int(input())
    a = list(map(int, input().split()))
    assert len(a) == n
    print(sum(a))


if __name__ == "__main__":
    main()
"""


def test_python_stdio_is_cpythons_and_pyrival_fastio_works(tmp_path):
    """sys.stdin/stdout/stderr have the names ('<stdin>', ...) and modes ('r'/'w', 'rb'/'wb') of
    `python3 -X utf8 main.py` at every level (text, buffer, raw): compared with the very
    interpreter the sandbox runs, outside it. PyRival's FastIO template reads ``file.mode``."""
    from arbiter.sandbox.config import SandboxConfig

    stdin_file = tmp_path / "in.txt"
    stdin_file.write_bytes(b"5\n1 2 3 4 1000000000000\n")
    with stdin_file.open("rb") as f:
        native = subprocess.run([SandboxConfig().python, "-I", "-S", "-X", "utf8", "-c", STDIO_REPORT],
                                stdin=f, capture_output=True, timeout=60, cwd=tmp_path)
    assert native.returncode == 0, native.stderr
    with Sandbox() as sb:
        assert sb.load_python(STDIO_REPORT) is None
        ex = sb.run_python(b"5\n")
        assert ex.ok, ex
        assert ex.stdout == native.stdout
        assert ex.stdout.splitlines()[0].startswith(b"<stdin> r utf-8 surrogateescape False BufferedReader <stdin> rb")

        assert sb.load_python(PYRIVAL_FASTIO) is None
        ex = sb.run_python(stdin_file.read_bytes())
        assert ex.ok, ex
        assert ex.stdout == b"1000000000010\n"
        big = list(range(1, 200_001))
        ex = sb.run_python(f"{len(big)}\n{' '.join(map(str, big))}\n".encode())
        assert ex.ok and ex.stdout == f"{sum(big)}\n".encode(), ex


def test_a_return_value_over_the_output_cap_is_output_limit():
    """A function-call result is capped like stdout: a value whose JSON is larger than
    ``output_bytes`` is output_limit (not a crash of the harness, not a runtime error)."""
    src = ("import resource\n"
           "def text(n):\n    return 'x' * n\n"
           "def boom():\n    raise ValueError('y' * 10000)\n"
           "def own_limit(n):\n"
           "    resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))\n"
           "    return 'z' * n\n")
    lim = Limits(output_bytes=1000)
    with Sandbox(limits=lim) as sb:
        assert sb.load_python(src) is None
        small = sb.call_python("text", [900])
        assert small.ok, small
        assert json.loads(small.result) == {"ok": True, "value": "x" * 900}
        over = sb.call_python("text", [1001])
        assert over.status is Status.OUTPUT_LIMIT, over
        assert json.loads(over.result)["output_limit"] is True
        huge = sb.call_python("text", [50 << 20])
        assert huge.status is Status.OUTPUT_LIMIT, huge
        # writing files may be allowed more than stdout: the result is still capped by output_bytes
        roomy = sb.call_python("text", [5000], limits=lim.with_(file_bytes=1 << 20))
        assert roomy.status is Status.OUTPUT_LIMIT, roomy
        # the program's own RLIMIT_FSIZE makes the harness's write fail (EFBIG): also OLE
        own = sb.call_python("own_limit", [500])
        assert own.status is Status.OUTPUT_LIMIT, own
        # an exception stays a runtime error, whatever its message's size
        err = sb.call_python("boom")
        assert err.status is Status.RUNTIME_ERROR, err
        assert json.loads(err.result)["ok"] is False and b"ValueError" in err.stderr
        after = sb.call_python("text", [3])
        assert after.ok and json.loads(after.result)["value"] == "xxx"


def test_host_dirs_of_dead_judges_are_pruned():
    """Each sandbox's host directory is ``arbiter-sbx-<judge pid>-XXXX``; a judge killed before
    closing its sandboxes leaves them, and the next judge process removes those of dead pids
    (never those of live ones)."""
    import os
    import tempfile
    from pathlib import Path

    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    base = Path(tempfile.gettempdir())
    stale = base / f"arbiter-sbx-{dead.pid}-qa{os.getpid()}"
    live = base / f"arbiter-sbx-{os.getpid()}-qa"
    for d in (stale, live):
        (d / "prog").mkdir(parents=True, exist_ok=True)
        (d / "prog" / "main").write_bytes(b"left behind")
    try:
        code = ("import os\nfrom arbiter.sandbox.sandbox import Sandbox\n"
                "with Sandbox() as sb:\n    print(os.getpid(), sb._tmp)\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60, check=True)
        pid, tmp = out.stdout.split()
        assert Path(tmp).name.startswith(f"arbiter-sbx-{pid}-") and not Path(tmp).exists()
        assert not stale.exists()
        assert (live / "prog" / "main").read_bytes() == b"left behind"
    finally:
        import shutil
        shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(live, ignore_errors=True)


def test_python_tracebacks_show_source_lines_like_python3_main_py():
    """The program is compiled from memory; its text is put in linecache so the traceback reads
    as ``python3 main.py``'s (the line and the caret), also for a module-level ``return`` body."""
    prog = "def f(x):\n    return 1 // x\nprint(f(0))\n"
    with Sandbox(limits=Limits(cpu_seconds=2)) as sb:
        assert sb.load_python(prog) is None
        ex = sb.run_python()
        assert ex.status is Status.RUNTIME_ERROR
        err = ex.stderr.decode()
        assert 'File "main.py", line 2, in f\n    return 1 // x\n' in err
        assert err.rstrip().endswith("ZeroDivisionError: integer division or modulo by zero")
        assert sb.load_python("import sys\nif True:\n    return\nprint('no')\n") is None
        assert sb.run_python().stdout == b""


#: Programs whose exit status CPython's shutdown decides (Py_FinalizeEx, _Py_HandleSystemExit),
#: each with what `python3 main.py` exits with (checked against that interpreter below).
EXIT_STATUS_PROGRAMS = {
    "fake_atexit_module": (3, "import sys\n"
                              "class Fake:\n"
                              "    def _ncallbacks(self): return 1\n"
                              "    def _run_exitfuncs(self): raise SystemExit(0)\n"
                              "sys.modules['atexit'] = Fake()\n"
                              "sys.exit(3)\n"),
    "atexit_callback_exits_0": (3, "import atexit, sys\natexit.register(lambda: sys.exit(0))\nsys.exit(3)\n"),
    "int_subclass_with_its_own_and": (3, "import sys\nclass C(int):\n    def __and__(self, o): return 0\n"
                                         "sys.exit(C(3))\n"),
    "int_posing_by_class_property": (1, "import sys\nclass C:\n    __class__ = property(lambda s: int)\n"
                                        "    def __and__(self, o): return 0\n    def __str__(self): return 'c'\n"
                                        "sys.exit(C())\n"),
    "exit_code_beyond_a_long": (255, "import sys\nsys.exit(2 ** 70 + 3)\n"),
    "fake_threading_module": (0, "import sys\nclass T:\n    _active = property(lambda s: 1 // 0)\n"
                                 "    def _shutdown(self): raise SystemExit(4)\n"
                                 "sys.modules['threading'] = T()\nsys.exit(0)\n"),
    "thread_exits_3_after_active_cleared": (3, "import os, threading, time\n"
                                               "threading.Thread(target=lambda: (time.sleep(0.2), os._exit(3))).start()\n"
                                               "threading._active.clear()\n"),
    "stdout_flush_fails": (120, "import sys\nclass F:\n    def write(self, s): pass\n"
                                "    def flush(self): raise SystemExit(0)\nsys.stdout = F()\nsys.exit(3)\n"),
}


def test_the_exit_status_is_cpythons_whatever_the_program_did_to_sys_modules():
    """A program may replace ``sys.modules['atexit']`` (a fake ``_run_exitfuncs`` raising
    ``SystemExit(0)`` once hid ``sys.exit(3)``: AC instead of RE), exit with an int subclass, a
    fake int, a huge int, replace ``threading`` or break stdout's flush: each case exits as the
    very interpreter the sandbox runs exits on the same file (run inside the sandbox too)."""
    from arbiter.sandbox.config import SandboxConfig

    python = SandboxConfig().python
    with Sandbox(limits=Limits(cpu_seconds=2)) as sb:
        for name, (code, source) in EXIT_STATUS_PROGRAMS.items():
            sb.put("main.py", source.encode())
            native = sb.run([python, "-I", "-S", "-X", "utf8", "main.py"])
            assert native.exit_code == code, (name, native)
            assert sb.load_python(source) is None
            ex = sb.run_python()
            assert ex.exit_code == code, (name, ex, ex.stderr[-500:])
            assert ex.status is (Status.OK if code == 0 else Status.RUNTIME_ERROR), (name, ex)


#: Programs whose output is written by the teardown of their module (a file object only the
#: program's globals hold is closed, so flushed; a __del__ runs), with what `python3 main.py` prints.
TEARDOWN_OUTPUT_PROGRAMS = {
    "open_fd_1": "out = open(1, 'w')\nout.write('5\\n')\n",
    "fdopen": "import os\nout = os.fdopen(1, 'w')\nout.write('5\\n')\n",
    "buffered_fileio": "import io\nw = io.BufferedWriter(io.FileIO(1, 'w'))\nw.write(b'5\\n')\n",
    "print_to_it_after_stdout": "print('a')\nout = open(1, 'w', closefd=False)\nprint('b', file=out)\n",
    "a_finalizer_prints": "class D:\n    def __del__(self):\n        print('bye')\nd = D()\nprint('hi')\n",
    # (red team: a finalizer that needs a module imported before its object, released after it)
    "a_writer_flushes_through_sys": ("import sys\nclass W:\n    def __init__(self):\n        self.parts = []\n"
                                     "    def __del__(self):\n        sys.stdout.write(''.join(self.parts))\n"
                                     "w = W()\nfor i in range(3):\n    w.parts.append(str(i) + '\\n')\n"),
    "a_writer_flushes_through_os": ("import os\nclass O:\n    def __init__(self):\n        self.b = []\n"
                                    "    def __del__(self):\n        os.write(1, ''.join(self.b).encode())\n"
                                    "out = O()\nout.b.append('42\\n')\n"),
    "a_finalizer_leaves_a_broken_stdout": (
        "import sys\nclass Bad:\n    closed = False\n    def write(self, s): return len(s)\n"
        "    def flush(self): raise OSError('no')\n"
        "class A:\n    def __del__(self, sys=sys, Bad=Bad):\n        sys.stdout = Bad()\na = A()\nprint(1)\n"),
}


def test_output_left_in_a_file_object_of_the_program_is_written_as_python3_writes_it():
    """``out = open(1, 'w')`` and writes that the program never flushed: CPython's shutdown tears the
    module down (its file objects closed, so flushed), the case process did not: empty output, WA for
    a correct program (red team, checkers: the real row codescope_1's accepted solution). Each case
    prints what the sandbox's own interpreter prints for the same file."""
    from arbiter.sandbox.config import SandboxConfig

    python = SandboxConfig().python
    with Sandbox(limits=Limits(cpu_seconds=2)) as sb:
        for name, source in TEARDOWN_OUTPUT_PROGRAMS.items():
            sb.put("main.py", source.encode())
            native = sb.run([python, "-I", "-S", "-X", "utf8", "main.py"])
            assert native.status is Status.OK and native.stdout, (name, native)
            assert sb.load_python(source) is None
            for last in (False, True):
                ex = sb.run_python(last=last)
                assert (ex.status, ex.stdout) == (Status.OK, native.stdout), (name, last, ex, ex.stderr[-300:])


@pytest.mark.parametrize("inside", ["/tmp/tool", "/work", "/dev/shm/x/y"])
def test_a_mount_inside_a_scratch_dir_is_refused(tmp_path, inside):
    """The wipe after each run empties the scratch dirs; a read-only mount inside one could never be
    removed (a counting tool once built under the host's /tmp and mounted at the same path hung it)."""
    with pytest.raises(ValueError, match="scratch dir"):
        Sandbox(mounts=[(str(tmp_path), inside)])
