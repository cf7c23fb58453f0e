"""The status classification (pure: reply and cgroup figures in, Execution out)."""

from __future__ import annotations

import signal

from arbiter.sandbox.classify import classify, cpu_seconds, memory_exceeded, status_of
from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits

LIM = Limits(cpu_seconds=1, wall_seconds=3, memory_bytes=64 * MiB, output_bytes=100)


def _reply(**kw):
    base = {"exit_code": 0, "signal": None, "cpu_seconds": 0.1, "wall_seconds": 0.2, "maxrss_bytes": 0,
            "wall_timeout": False, "stdout_size": 3, "stderr_size": 0}
    base.update(kw)
    return base


def _status(reply, mem_delta=0, oom=0, cg_cpu=0.0, have_memcg=True):
    ex = classify(reply, LIM, b"out", b"", None, mem_delta, oom, cg_cpu, have_memcg)
    return ex.status, ex.detail


def test_ok():
    ex = classify(_reply(), LIM, b"out", b"err", b"{}", 5 * MiB, 0, 0.0, True)
    assert (ex.status, ex.detail, ex.exit_code, ex.cpu_seconds) == (Status.OK, "", 0, 0.1)
    assert ex.peak_memory_bytes == 5 * MiB and ex.result == b"{}" and not ex.stdout_truncated


def test_exit_code_and_signal():
    assert _status(_reply(exit_code=3)) == (Status.RUNTIME_ERROR, "exit code 3")
    assert _status(_reply(exit_code=None, signal=signal.SIGSEGV)) == (Status.RUNTIME_ERROR, "killed by SIGSEGV")
    assert _status(_reply(exit_code=None, signal=99)) == (Status.RUNTIME_ERROR, "killed by signal 99")
    assert _status(_reply(exit_code=None, status_lost=True))[0] is Status.RUNTIME_ERROR


def test_limits():
    assert _status(_reply(wall_timeout=True)) == (Status.TIME_LIMIT, "wall time limit exceeded (3 s)")
    assert _status(_reply(cpu_seconds=1.01)) == (Status.TIME_LIMIT, "CPU time limit exceeded (1 s)")
    assert _status(_reply(signal=signal.SIGXCPU))[0] is Status.TIME_LIMIT
    assert _status(_reply(stdout_size=101)) == (Status.OUTPUT_LIMIT, "output limit exceeded (100 bytes)")
    assert _status(_reply(signal=signal.SIGXFSZ))[0] is Status.OUTPUT_LIMIT
    assert _status(_reply(), mem_delta=64 * MiB + 1) == (Status.MEMORY_LIMIT, "memory limit exceeded (64 MiB)")
    assert _status(_reply(), oom=1)[0] is Status.MEMORY_LIMIT


def test_precedence():
    """tampered > wall > memory > CPU > output > signal > lost status > exit code."""
    everything = _reply(sandbox_tampered="rlimits", wall_timeout=True, cpu_seconds=5, stdout_size=500,
                        signal=signal.SIGKILL, exit_code=None, status_lost=True)
    order = [("sandbox_tampered", Status.RUNTIME_ERROR), ("wall_timeout", Status.TIME_LIMIT),
             ("memory", Status.MEMORY_LIMIT), ("cpu_seconds", Status.TIME_LIMIT),
             ("stdout_size", Status.OUTPUT_LIMIT), ("signal", Status.RUNTIME_ERROR)]
    reply = dict(everything)
    for key, want in order:
        got, detail = _status(reply, oom=1 if key == "memory" else 0)
        assert got is want, (key, detail)
        if key != "memory":
            reply.pop(key)
    assert "rlimits" in status_of(everything, LIM, 0.0, False)[1]


def test_cpu_from_the_cgroup_only_when_clearly_more():
    assert cpu_seconds({"cpu_seconds": 0.5}, 0.54) == 0.5
    assert cpu_seconds({"cpu_seconds": 0.5}, 0.56) == 0.56
    assert _status(_reply(cpu_seconds=0.5), cg_cpu=1.2)[0] is Status.TIME_LIMIT


def test_memory_without_a_memory_cgroup_is_maxrss():
    assert memory_exceeded(LIM, 64 * MiB + 1, 0, 0, have_memcg=False)
    assert not memory_exceeded(LIM, 64 * MiB + 1, 0, 0, have_memcg=True)
    assert not memory_exceeded(LIM, 0, 10 ** 12, 1, have_memcg=False)


def test_truncation_flags_and_peak():
    """The peak is the figure the memory limit is judged on: the cgroup's (not a larger
    ``ru_maxrss``: a forked Python case's counts the interpreter it shares), else ``ru_maxrss``."""
    reply = _reply(stdout_size=10, stderr_size=7, maxrss_bytes=9 * MiB)
    ex = classify(reply, LIM, b"out", b"e", None, 2 * MiB, 0, 0.0, True)
    assert ex.stdout_truncated and ex.stderr_truncated and ex.peak_memory_bytes == 2 * MiB
    assert classify(reply, LIM, b"out", b"e", None, 2 * MiB, 0, 0.0, False).peak_memory_bytes == 9 * MiB
