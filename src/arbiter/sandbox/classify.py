"""A run's :class:`Status` from the figures of its reply and its cgroups: small pure rules.

The rules and their order are in docs/sandbox.md ("Statuses").
"""

from __future__ import annotations

import signal
from typing import Any

from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.limits import MiB, Limits

#: CPU seconds the cgroup may count beyond the process's own rusage before it is taken instead
#: (processes the program did not wait for).
CPU_TOLERANCE = 0.05
#: A run stopped by the wall limit is starved (not TLE) when its run-queue delay, less twice its
#: CPU (the most its own tasks can make each other wait), is over this share of its elapsed time.
STARVED_SHARE = 0.2


def cpu_seconds(reply: dict[str, Any], cg_cpu: float) -> float:
    """The run's CPU: the case's rusage, or the cgroup's figure when clearly more."""
    cpu = float(reply.get("cpu_seconds", 0.0))
    return cg_cpu if cg_cpu > cpu + CPU_TOLERANCE else cpu


def memory_exceeded(lim: Limits, maxrss: int, mem_delta: int, oom_kills: int,
                    have_memcg: bool) -> bool:
    """With a memory cgroup: an OOM kill, or the peak over the limit; else ``ru_maxrss`` over it."""
    if have_memcg:
        return oom_kills > 0 or mem_delta > lim.memory_bytes
    return maxrss > lim.memory_bytes


def starved(reply: dict[str, Any], cpu: float) -> bool:
    """Stopped by the wall limit while other processes held the CPU (see :data:`STARVED_SHARE`)."""
    if not reply.get("wall_timeout"):
        return False
    delay = float(reply.get("run_delay_seconds", 0.0))
    return delay - 2 * cpu > STARVED_SHARE * float(reply.get("wall_seconds", 0.0))


def starved_detail(reply: dict[str, Any], lim: Limits, cpu: float) -> str:
    return (f"starved: runnable {float(reply.get('run_delay_seconds', 0.0)):.1f} s without CPU in "
            f"{float(reply.get('wall_seconds', 0.0)):.1f} s (wall limit {lim.wall:g} s, CPU "
            f"{cpu:.2f} s{', stopped by the cap' if reply.get('wall_capped') else ''}): "
            "the host is overloaded, not the program slow")


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def tampered_detail(what: str) -> str:
    return (f"the program changed the sandbox server's own {what} (a process of the same uid "
            "may: prlimit, setpriority, sched_setaffinity on PID 1); this run and every later "
            "one in the sandbox fail")


def status_of(reply: dict[str, Any], lim: Limits, cpu: float, mem_over: bool) -> tuple[Status, str]:
    """The first rule that matches: the program not started (ours), tampered server, starved
    (wall timeout within the CPU and memory limits while others held the CPU), wall timeout,
    memory, CPU, output, signal, lost status, exit code; else OK."""
    sig, code = reply.get("signal"), reply.get("exit_code")
    if reply.get("exec_failed"):  # nothing of the program ran: never its verdict
        return Status.SANDBOX_ERROR, f"the program could not be started: {reply['exec_failed']}"
    if reply.get("sandbox_tampered"):
        return Status.RUNTIME_ERROR, tampered_detail(reply["sandbox_tampered"])
    if (starved(reply, cpu) and not mem_over and cpu <= lim.cpu_seconds
            and sig != signal.SIGXCPU):
        return Status.SANDBOX_ERROR, starved_detail(reply, lim, cpu)
    if reply.get("wall_timeout"):
        return Status.TIME_LIMIT, f"wall time limit exceeded ({lim.wall:g} s)"
    if mem_over:
        return Status.MEMORY_LIMIT, f"memory limit exceeded ({lim.memory_bytes // MiB} MiB)"
    if sig == signal.SIGXCPU or cpu > lim.cpu_seconds:
        return Status.TIME_LIMIT, f"CPU time limit exceeded ({lim.cpu_seconds:g} s)"
    if sig == signal.SIGXFSZ or int(reply.get("stdout_size", 0)) > lim.output_bytes:
        return Status.OUTPUT_LIMIT, f"output limit exceeded ({lim.output_bytes} bytes)"
    if sig is not None:
        return Status.RUNTIME_ERROR, f"killed by {signal_name(sig)}"
    if reply.get("status_lost"):
        return Status.RUNTIME_ERROR, ("exit status unknown: a process of the program killed "
                                      "the sandbox's forker, which had reaped it")
    if code != 0:
        return Status.RUNTIME_ERROR, f"exit code {code}"
    return Status.OK, ""


def classify(reply: dict[str, Any], lim: Limits, stdout: bytes, stderr: bytes,
             result: bytes | None, mem_delta: int, oom_kills: int, cg_cpu: float,
             have_memcg: bool) -> Execution:
    """The :class:`Execution` of a run: the server's ``reply`` (its header), the blobs it sent,
    and the cgroup figures (memory peak over the baseline, OOM kills, CPU seconds)."""
    cpu = cpu_seconds(reply, cg_cpu)
    maxrss = int(reply.get("maxrss_bytes", 0))
    status, detail = status_of(reply, lim, cpu,
                               memory_exceeded(lim, maxrss, mem_delta, oom_kills, have_memcg))
    out_size, err_size = int(reply.get("stdout_size", 0)), int(reply.get("stderr_size", 0))
    return Execution(
        status=status, exit_code=reply.get("exit_code"), signal=reply.get("signal"),
        cpu_seconds=cpu, wall_seconds=float(reply.get("wall_seconds", 0.0)),
        peak_memory_bytes=mem_delta if have_memcg else maxrss, stdout=stdout, stderr=stderr,
        stdout_truncated=out_size > len(stdout), stderr_truncated=err_size > len(stderr),
        result=result, detail=detail,
        run_delay_seconds=float(reply.get("run_delay_seconds", 0.0)),
        starved=status is Status.SANDBOX_ERROR and detail.startswith("starved:"),
        server_delay_seconds=float(reply.get("server_delay_seconds", 0.0)))
