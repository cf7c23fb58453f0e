"""A program is told the same number of online CPUs on every host (docs/sandbox.md, LIMITS).

Without it ``os.cpu_count()`` in a case was the host's cores: ``multiprocessing.Pool()`` on a 128-core
node starts 128 workers, past a case's ``processes`` limit (RE) or its memory limit (MLE), while the
same correct program is AC on a small node.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.sandbox import bwrap
from arbiter.sandbox.limits import Limits
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


@pytest.fixture
def online_file(monkeypatch):
    """Shows the sandbox another ``/sys/devices/system/cpu/online``: the test writes the file returned
    (a file the sandbox's user can read: under /var/tmp, not pytest's root-only folders)."""
    folder = Path(tempfile.mkdtemp(prefix="arbiter-cpus-", dir="/var/tmp"))
    os.chmod(folder, 0o755)
    online = folder / "online"
    monkeypatch.setattr(bwrap, "CPU_ONLINE_FILE", str(online))
    try:
        yield online
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_every_program_sees_the_same_cpu_count():
    comp = compile_cpp(HARDWARE, CompileSpec(command="g++ -O2 main.cpp -o main"))
    assert comp.ok, comp.message
    with Sandbox(files={"main": comp.binary}) as sb:
        assert sb.load_python(COUNTS) is None
        ex = sb.run_python(b"")
        assert ex.ok and ex.stdout.split() == [str(bwrap.VISIBLE_CPUS).encode(), b"0-1"], ex
        ex = sb.run(["/prog/main"], b"")
        assert ex.ok and ex.stdout.split() == [str(bwrap.VISIBLE_CPUS).encode()] * 2, ex


def test_the_count_comes_from_the_sandbox_not_the_host(online_file):
    """Another file at the same place gives another count: what a case sees is the sandbox's."""
    online_file.write_text("0-6\n")
    online_file.chmod(0o644)
    with Sandbox() as sb:
        assert sb.load_python(COUNTS) is None
        ex = sb.run_python(b"")
    assert ex.ok and ex.stdout.split() == [b"7", b"0-6"], ex


@pytest.mark.parametrize("cpus, outcome", [("0-1", "ok"), ("0-95", "refused")])
def test_a_default_pool_fits_the_limits_only_at_the_visible_count(online_file, cpus, outcome):
    """``Pool()`` under the default limits: 2 workers are AC; a 96-core view (what a large node showed
    before) needs more tasks than ``processes`` allows."""
    online_file.write_text(cpus + "\n")
    online_file.chmod(0o644)
    with Sandbox(limits=Limits(cpu_seconds=10)) as sb:
        assert sb.load_python(POOL) is None
        ex = sb.run_python(b"")
    if outcome == "ok":
        assert ex.ok and ex.stdout == b"2 332833500\n", (ex.status, ex.stdout, ex.stderr[-300:])
    else:
        assert not ex.ok and ex.status.name == "RUNTIME_ERROR", (ex.status, ex.stdout)
