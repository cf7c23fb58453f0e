"""The executor API itself: one-shot runs, limits, cgroup hygiene."""

from __future__ import annotations

import subprocess
import sys

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
    keeps almost nothing, and a 60 MB output, fit in a 64 MiB limit."""
    big = b"1\n" * (50 << 20)
    with Sandbox(limits=Limits(memory_bytes=64 << 20, output_bytes=64 << 20)) as sb:
        reader = sb.run(["/bin/sh", "-c", "wc -l"], big)
        assert reader.status is Status.OK and reader.stdout.strip() == str(50 << 20).encode()
        assert reader.peak_memory_bytes < 16 << 20, reader.peak_memory_bytes
        writer = sb.run(["/bin/sh", "-c", "head -c 60000000 /dev/zero"])
        assert writer.status is Status.OK and len(writer.stdout) == 60_000_000
        assert writer.peak_memory_bytes < 16 << 20, writer.peak_memory_bytes
        hog = sb.run(["/usr/bin/python3", "-c", "x = bytearray(100 << 20)"])
        assert hog.status is Status.MEMORY_LIMIT
        assert sb.load_python("import sys\nprint(sum(1 for _ in sys.stdin.buffer))\n") is None
        py = sb.run_python(big)
        assert py.ok and py.stdout == str(50 << 20).encode() + b"\n", py
        assert sb.load_python("import sys\nprint(len(sys.stdin.buffer.read()))\n") is None
        assert sb.run_python(big).status is Status.MEMORY_LIMIT  # holding the input is its memory


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
    """Each sandbox is its own CPU group (one core at most, equal shares): a neighbour spinning 60
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
