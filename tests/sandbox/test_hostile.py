"""The hostile corpus: hostile and broken programs, each with the sandbox status it must get.

Every program in tests/hostile/{python,cpp} declares in its header comment:
``expect:`` the status; optional ``limits:`` (cpu=, wall=, memory=, output=), ``stdout:`` (exact
stdout, stripped), ``stdout-hex:``, ``signal:``, ``detail:`` (a substring of the run's detail, e.g.
which limit stopped it), ``stderr-contains:`` (a substring of stderr) and ``stdin:`` (``port`` /
``secret-paths``, filled in by this test). For each run we also check: it ended (bounded by its wall limit, with room for a loaded host:
a hang detector, not a speed test), nothing of it
is left running in the sandbox afterwards, the sandbox still serves the next run, its cgroups are
gone after close, a canary file outside is untouched, and the judge (this process) is fine.
"""

from __future__ import annotations

import hashlib
import re
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from arbiter.languages.cpp import compile as cpp
from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox

HOSTILE = Path(__file__).resolve().parents[1] / "hostile"
PROGRAMS = sorted(HOSTILE.glob("python/*.py")) + sorted(HOSTILE.glob("cpp/*.cpp"))


def parse_header(path: Path) -> dict[str, str]:
    meta: dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*(?:#|//)\s*([a-z-]+):\s?(.*)$", line)
        if not m:
            if line.strip() and not line.lstrip().startswith(("#", "//")):
                break
            continue
        meta[m.group(1)] = m.group(2).strip()
    return meta


def limits_from(meta: dict[str, str]) -> Limits:
    kw = {}
    for item in meta.get("limits", "").split():
        key, value = item.split("=")
        if key == "cpu":
            kw["cpu_seconds"] = float(value)
        elif key == "wall":
            kw["wall_seconds"] = float(value)
        elif key == "memory":
            kw["memory_bytes"] = int(value.removesuffix("MiB")) * MiB
        elif key == "output":
            kw["output_bytes"] = int(value.removesuffix("MiB")) * MiB
    kw.setdefault("cpu_seconds", 2.0)
    return Limits(**kw)


_binaries: dict[Path, bytes] = {}


def compile_cpp(path: Path) -> bytes:
    """Compile a corpus program with arbiter's C++ toolchain (sandboxed compile + compile cache;
    the corpus is untrusted too)."""
    if path not in _binaries:
        res = cpp.compile_cpp(path.read_bytes().decode("utf-8", "surrogateescape"),
                              cpp.CompileSpec("g++ -std=gnu++17 -O2 -pthread main.cpp -o main", 120,
                                              online_judge=False))
        assert res.ok, res.message
        assert res.binary
        _binaries[path] = res.binary
    return _binaries[path]


class TcpTrap:
    """A real TCP server on the host's loopback that records any connection."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        self._t = threading.Thread(target=self._serve, daemon=True)
        self._t.start()

    def _serve(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
                self.connections += 1
                conn.close()
            except OSError:
                continue

    def close(self):
        self._stop = True
        self._t.join()
        self.sock.close()


@pytest.fixture
def canary(tmp_path):
    path = tmp_path / "canary.txt"
    path.write_text("untouched\n")
    secret = tmp_path / "expected_output.txt"
    secret.write_text("EXPECTED-ANSWER 42\n")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    yield path, secret
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert secret.read_text() == "EXPECTED-ANSWER 42\n"


@pytest.mark.parametrize("path", PROGRAMS, ids=[f"{p.parent.name}/{p.stem}" for p in PROGRAMS])
def test_hostile_program(path: Path, canary):
    canary_path, secret = canary
    meta = parse_header(path)
    expected = Status(meta["expect"])
    limits = limits_from(meta)
    stdin = b""
    trap = None
    if meta.get("stdin") == "port":
        trap = TcpTrap()
        stdin = str(trap.port).encode()
    elif meta.get("stdin") == "secret-paths" or path.stem == "read_secrets":
        stdin = f"{secret} {canary_path} {Path(__file__).resolve()}\n".encode()
    try:
        if path.suffix == ".cpp":
            sb = Sandbox(files={"main": compile_cpp(path)}, limits=limits)
            start = time.monotonic()
            ex = sb.run(["/prog/main"], stdin)
        else:
            sb = Sandbox(limits=limits)
            assert sb.load_python(path.read_text()) is None
            start = time.monotonic()
            ex = sb.run_python(stdin)
        elapsed = time.monotonic() - start
        try:
            assert ex.status is expected, (ex.status, ex.detail, ex.stderr[-2000:])
            assert elapsed <= limits.wall + 15.0, elapsed  # bounded by the wall limit, never hangs
            if "stdout" in meta:
                assert ex.stdout.decode(errors="replace").strip() == meta["stdout"]
            if "stdout-hex" in meta:
                assert ex.stdout == bytes.fromhex(meta["stdout-hex"])
            if "signal" in meta:
                assert ex.signal == getattr(signal, meta["signal"]), ex
            if "detail" in meta:
                assert meta["detail"] in ex.detail, ex.detail
            if "stderr-contains" in meta:
                assert meta["stderr-contains"].encode() in ex.stderr, ex.stderr[-2000:]
            # nothing of the run is left: only the server (and its forker)
            assert sb.stray_processes() == []
            if sb.task_count() is not None:
                assert sb.task_count() <= 2, sb.task_count()
            # the sandbox survived and serves the next run
            follow = sb.run(["/usr/bin/printf", "next"], limits=Limits())
            assert follow.status is Status.OK and follow.stdout == b"next", follow
            dirs = sb.cgroup_dirs
        finally:
            sb.close()
        assert all(not d.exists() for d in dirs)
    finally:
        if trap is not None:
            trap.close()
            assert trap.connections == 0


def test_daemon_does_not_outlive_the_run():
    """The daemon of daemonize.py would append to /tmp/daemon-alive every 0.1 s for a minute."""
    with Sandbox(limits=Limits(cpu_seconds=1)) as sb:
        assert sb.load_python((HOSTILE / "python" / "daemonize.py").read_text()) is None
        ex = sb.run_python()
        assert ex.status is Status.OK
        time.sleep(0.5)
        check = sb.run(["/usr/bin/ls", "/tmp"])
        assert check.stdout.strip() == b"", check  # /tmp wiped, and no daemon recreated it
        assert sb.stray_processes() == []


def test_cases_do_not_share_scratch_files():
    with Sandbox() as sb:
        assert sb.load_python(
            "import os\n"
            "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/work')), sorted(os.listdir('/dev/shm')))\n"
            "for d in ('/tmp', '/work', '/dev/shm'):\n"
            "    open(d + '/left-behind', 'w').write('x')\n") is None
        first = sb.run_python()
        second = sb.run_python()
        assert first.stdout == second.stdout == b"[] [] []\n"


def test_a_scratch_dir_made_unreadable_is_still_wiped():
    """chmod 0 on /tmp (a program owns its scratch dirs) would hide its files from the wipe and
    hand them to the next case; extended attributes on the dirs would carry data too."""
    with Sandbox() as sb:
        assert sb.load_python(
            "import os\n"
            "first = not os.listdir('/work')\n"
            "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/work')), oct(os.stat('/tmp').st_mode & 0o7777))\n"
            "open('/tmp/secret', 'w').write('from an earlier case')\n"
            "os.mkdir('/work/d'); open('/work/d/f', 'w').write('x'); os.chmod('/work/d', 0)\n"
            "try:\n"
            "    os.setxattr('/tmp', 'user.note', b'left')\n"
            "except OSError:\n"
            "    pass\n"
            "os.chmod('/tmp', 0)\n") is None
        first, second = sb.run_python(), sb.run_python()
        assert first.ok and second.ok, (first, second)
        assert first.stdout == second.stdout == b"[] [] 0o1777\n", (first.stdout, second.stdout)
        assert sb.load_python("import os\nprint(os.listxattr('/tmp'))\n") is None
        assert sb.run_python().stdout == b"[]\n"


def test_stdin_is_a_real_file_descriptor():
    with Sandbox() as sb:
        assert sb.load_python(
            "import sys, os\n"
            "data = sys.stdin.buffer.read()\n"
            "sys.stdout.buffer.write(data[::-1])\n"
            "print(os.fstat(0).st_size, file=sys.stderr)\n"
            "print(str(10 ** 5000)[:3], len(str(10 ** 5000)))\n") is None
        ex = sb.run_python(b"abc\n")
        assert ex.ok, ex
        assert ex.stdout.startswith(b"\ncba")
        assert b"100 5001" in ex.stdout  # no int-to-str digit limit
        assert ex.stderr.strip() == b"4"


def test_programs_are_the_oom_killers_first_choice():
    """Every program process has oom_score_adj 1000; the sandbox's server keeps its own, so a
    memory cgroup OOM kills the program, never the server."""
    with Sandbox() as sb:
        native = sb.run(["/bin/sh", "-c", "cat /proc/self/oom_score_adj /proc/1/oom_score_adj"])
        assert native.stdout.split() == [b"1000", b"0"], native
        assert sb.load_python("print(open('/proc/self/oom_score_adj').read().strip())") is None
        assert sb.run_python().stdout == b"1000\n"


def test_a_deep_directory_chain_is_wiped_and_the_sandbox_serves_on():
    """A 20,000-deep chain of directories (tests/hostile/python/deep_directory_chain.py) once
    made the server's wipe raise RecursionError after its reply: a second reply for the same
    request, then SANDBOX_ERROR for every later run. Each case gets its own honest status and
    starts with empty scratch dirs."""
    source = (HOSTILE / "python" / "deep_directory_chain.py").read_text()
    source = "import os\nprint(os.listdir('/tmp'))\n" + source
    with Sandbox(limits=Limits(cpu_seconds=5)) as sb:
        assert sb.load_python(source) is None
        runs = [sb.run_python() for _ in range(3)]
        assert [ex.status for ex in runs] == [Status.OK] * 3, runs
        assert [ex.stdout for ex in runs] == [b"[]\nbuilt 20000\n"] * 3, runs
        native = sb.run(["/usr/bin/find", "/tmp", "/work", "/dev/shm"])
        assert native.ok and native.stdout.split() == [b"/tmp", b"/work", b"/dev/shm"], native


def test_what_a_run_leaves_in_the_scratch_dirs_costs_the_next_run_nothing():
    """tests/hostile/cpp/scratch_entry_flood.cpp leaves 60,000 entries in /tmp. Wiped after the
    reply, their removal (about 0.15 s of the server's CPU) ran into the next run: it made a
    trivial run a time limit. Now the wipe ends before the flood's own reply and is never a
    program's CPU: /bin/true after it costs what /bin/true costs (about 1 ms)."""
    path = HOSTILE / "cpp" / "scratch_entry_flood.cpp"
    with Sandbox(files={"main": compile_cpp(path)}, limits=limits_from(parse_header(path))) as sb:
        flood = sb.run(["/prog/main"])
        assert flood.status is Status.OK and flood.stdout == b"flooded\n", flood
        after = [sb.run(["/bin/true"], limits=Limits(cpu_seconds=1)) for _ in range(2)]
        assert [ex.status for ex in after] == [Status.OK] * 2, after
        assert all(ex.cpu_seconds < 0.05 for ex in after), after
        assert sb.run(["/usr/bin/find", "/tmp"]).stdout == b"/tmp\n"
