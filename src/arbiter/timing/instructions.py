"""Exact instruction counts of a native program, measured inside the sandbox under arbiter's valgrind tool.

:func:`count_instructions` counts one case in a caller's sandbox; :func:`measure_instructions` counts a binary
on a list of cases in a fresh one; :func:`valgrind_limits` scales native limits for a valgrind run. A run that
crashes, hits a limit, prints a wrong answer, calls ``execve``, needs processes, makes a client request, changes its
code at run time or leaves no count is a failed :class:`CaseCount`, never a figure.

This module is also the instruction meter's front door: the names of :mod:`~arbiter.timing.status`,
:mod:`~arbiter.timing.processes`, :mod:`~arbiter.timing.valgrind` and :mod:`~arbiter.timing.valgrind_log` are
importable from here. How a case is counted, what a program can and cannot do: ``docs/measurement.md``.
"""

from __future__ import annotations

import contextlib
import os
import signal as _signal
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from arbiter.sandbox.execution import Execution
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.sandbox.seccomp import fd_floor
from arbiter.timing.processes import (
    CREATES_PROCESSES_REASON, NO_NEW_PROCESSES, PROBED_STATUSES, find_prlimit, measuring_sandbox_limits,
    process_probe, single_process_argv,
)
from arbiter.timing.cycles import parse_sim_line
from arbiter.timing.status import MeasureStatus, default_same_output, run_status
from arbiter.timing.valgrind import (
    EXEC_REFUSED_LAUNCHER, SANDBOX_TOOL_DIR, TOOL_NAME, TOOL_OPTIONS, TOOL_SOURCE, Valgrind, ValgrindUnavailable,
    build_counter_tool, cpu_identity, find_valgrind, host_has_cpu_flag, valgrind_available,
)
from arbiter.timing.valgrind_log import (
    CLIENT_REQUEST_REASON, MODIFIES_CODE_REASON, WRITES_METER_REASON, meter_reason, parse_cachegrind_log,
    refused_client_request, refused_code_change, refused_meter_write, undecodable_instruction,
)
from arbiter.timing.wallclock import core_lease, held_core

__all__ = [
    "CLIENT_REQUEST_REASON",
    "CREATES_PROCESSES_REASON",
    "EXEC_REFUSED_LAUNCHER",
    "LOG_FD",
    "MEMORY_EXTRA_BYTES",
    "MODIFIES_CODE_REASON",
    "WRITES_METER_REASON",
    "NO_NEW_PROCESSES",
    "PROBED_STATUSES",
    "SANDBOX_TOOL_DIR",
    "STARTUP_SECONDS",
    "TIME_FACTOR",
    "TOOL_NAME",
    "TOOL_OPTIONS",
    "TOOL_SOURCE",
    "build_counter_tool",
    "refused_client_request",
    "refused_code_change",
    "refused_meter_write",
    "CaseCount",
    "InstructionRun",
    "MeasureStatus",
    "Valgrind",
    "ValgrindUnavailable",
    "count_instructions",
    "cpu_identity",
    "default_same_output",
    "find_prlimit",
    "find_valgrind",
    "measure_instructions",
    "measuring_sandbox_limits",
    "meter_reason",
    "parse_cachegrind_log",
    "process_probe",
    "run_status",
    "single_process_argv",
    "undecodable_instruction",
    "valgrind_available",
    "valgrind_limits",
]


#: CPU-time factor of a valgrind run over the native limit (a wide margin over the worst slowdown seen).
TIME_FACTOR = 30.0
#: Seconds added to a valgrind run's CPU limit for valgrind's own start-up (with margin for busy hosts).
STARTUP_SECONDS = 5.0
#: Memory added to a valgrind run's limit: valgrind's own heap and translation cache.
MEMORY_EXTRA_BYTES = 128 * MiB
#: stderr kept from a valgrind run (valgrind's own messages land there too).
STDERR_BYTES = 256 * 1024
#: The descriptor valgrind logs to (``--log-fd``): a pipe read by the sandbox's server (:meth:`Sandbox.run`
#: ``log_fd=``); cachegrind's summary line (``==PID== I refs: N``) is the last thing valgrind writes there.
LOG_FD = 3


def valgrind_limits(native: Limits, *, time_factor: float = TIME_FACTOR, startup_seconds: float = STARTUP_SECONDS,
                    memory_extra_bytes: int = MEMORY_EXTRA_BYTES) -> Limits:
    """The limits of a valgrind run of a program whose native limits are ``native``: CPU ``native x time_factor +
    startup_seconds``, wall 1.5 x that + 5 s, memory ``+ memory_extra_bytes``, the native stack (valgrind's
    ``--main-stacksize``), stderr at least :data:`STDERR_BYTES`, one process (``docs/measurement.md``, "Limits")."""
    cpu = native.cpu_seconds * time_factor + startup_seconds
    return native.with_(cpu_seconds=cpu, wall_seconds=cpu * 1.5 + 5.0, stack_bytes=native.stack,
                        memory_bytes=native.memory_bytes + memory_extra_bytes,
                        stderr_bytes=max(native.stderr_bytes, STDERR_BYTES), processes=1)


@dataclass
class CaseCount:
    """One case measured under valgrind.

    - ``case``: the case name; ``status``: :class:`MeasureStatus`; ``detail``: why it failed ("" when ok).
    - ``instructions``: guest instructions executed (valgrind ``Ir``), start-up included; ``None`` unless ok.
    - ``exit_code`` / ``signal``: of the valgrind process (valgrind exits like its program).
    - ``cpu_seconds`` / ``wall_seconds`` / ``peak_memory_bytes``: of the valgrind run (not of the program alone).
    """

    case: str
    status: MeasureStatus
    instructions: int | None = None
    detail: str = ""
    exit_code: int | None = None
    signal: int | None = None
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    peak_memory_bytes: int = 0
    events: dict[str, int] | None = None
    cycles: int | None = None

    @property
    def ok(self) -> bool:
        """True when the run produced a count."""
        return self.status is MeasureStatus.OK and self.instructions is not None

    @property
    def cost(self) -> int | None:
        """The run's figure: model cycles under a cycles meter (``events``: the simulated misses), else
        instructions."""
        return self.cycles if self.cycles is not None else self.instructions

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        d = asdict(self)
        d["status"] = self.status.value
        return d


def count_instructions(sandbox: Sandbox, argv: Sequence[str] = ("/prog/main",), stdin: bytes = b"", *,
                       limits: Limits, expected: bytes | None = None,
                       same_output: Callable[[bytes, bytes], bool] | None = None, case: str = "",
                       valgrind: Valgrind | None = None, native_limits: Limits | None = None) -> CaseCount:
    """Run ``argv`` once under the counting tool in ``sandbox`` with ``stdin`` and return its instruction count.

    ``sandbox`` must have been created with ``valgrind.mounts`` (the counting tool is mounted from the host).
    ``limits`` are the limits of the valgrind run itself (use :func:`valgrind_limits` on the native limits); its
    stack limit is also the program's stack under valgrind (``--main-stacksize``).
    ``expected``: the expected stdout (``None``: not checked); ``same_output`` compares them
    (default :func:`default_same_output`). Never raises for the program's behaviour: every failure is a
    :class:`CaseCount` with a failed status (``docs/measurement.md``, "How one case is counted"); the native runs
    that tell ``creates_processes`` and ``unsupported_by_meter`` apart use ``native_limits`` (default ``limits``).
    Raises :class:`ValgrindUnavailable` when valgrind is missing.
    """
    vg = valgrind or find_valgrind()
    # set before valgrind starts (docs/measurement.md), at most the sandbox's descriptor floor
    nofile = min(max(int(limits.open_files), LOG_FD + 1), fd_floor())
    full = [vg.prlimit, f"--nofile={nofile}:{nofile}", "--nproc=1:1", "--", vg.sandbox_tool, *vg.options,
            f"--main-stacksize={limits.stack}", f"--log-fd={LOG_FD}", *argv]
    ex = sandbox.run(full, stdin, limits, env=vg.env, log_fd=LOG_FD)
    common = dict(case=case, exit_code=ex.exit_code, signal=ex.signal, cpu_seconds=ex.cpu_seconds,
                  wall_seconds=ex.wall_seconds, peak_memory_bytes=ex.peak_memory_bytes)
    refused = refused_client_request(ex.log)
    if refused is not None:  # first: whatever the run printed or how it ended, part of its work was not counted
        return CaseCount(status=MeasureStatus.CLIENT_REQUEST,
                         detail=f"{CLIENT_REQUEST_REASON} (request {refused}, refused by the meter, which stopped "
                                "the run; valgrind would have run code of the program natively or otherwise outside "
                                "the count)", **common)
    wrote = refused_meter_write(ex.log)
    if wrote is not None:  # the figures could be the program's own: nothing this run did is a measurement
        return CaseCount(status=MeasureStatus.WRITES_METER,
                         detail=f"{WRITES_METER_REASON} ({wrote}; refused by the meter, which stopped the run)",
                         **common)
    changed = refused_code_change(ex.log)
    if changed is not None:  # the meter could have run stale code: nothing this run did is a measurement
        return CaseCount(status=MeasureStatus.MODIFIES_CODE,
                         detail=f"{MODIFIES_CODE_REASON} ({changed}; refused by the meter, which stopped the run)",
                         **common)
    if ex.exit_code == 101 and b"EXEC FAILED" in (ex.log or b"") + ex.stderr:
        return CaseCount(status=MeasureStatus.EXEC_REFUSED,
                         detail="the program called execve; only a single process can be measured", **common)
    undecodable = undecodable_instruction(ex.log) if ex.signal == _signal.SIGILL else None
    if undecodable is not None:
        native = sandbox.run(list(argv), stdin, native_limits or limits)
        return _undecodable_outcome(undecodable, native, expected, same_output, common)
    status, detail = run_status(ex, expected, same_output)
    if status in PROBED_STATUSES:
        why = process_probe(sandbox, argv, stdin, native_limits or limits, expected, same_output)
        if why is not None:
            return CaseCount(status=MeasureStatus.CREATES_PROCESSES, detail=why, **common)
    if status is not MeasureStatus.OK:
        return CaseCount(status=status, detail=detail, **common)
    try:
        n = parse_cachegrind_log(ex.log)
    except ValueError as exc:
        return CaseCount(status=MeasureStatus.NO_COUNT, detail=str(exc), **common)
    if vg.cycle_model is None:
        return CaseCount(status=MeasureStatus.OK, instructions=n, **common)
    events = parse_sim_line(ex.log)
    if events is None:
        return CaseCount(status=MeasureStatus.NO_COUNT, detail="valgrind's log has no simulation line", **common)
    return CaseCount(status=MeasureStatus.OK, instructions=n, events=events, cycles=vg.cycle_model.cost(n, events),
                     **common)


def _undecodable_outcome(undecodable: tuple[str, str], native: Execution, expected: bytes | None,
                         same_output: Callable[[bytes, bytes], bool] | None, common: dict[str, Any]) -> CaseCount:
    """A run valgrind killed with SIGILL on an instruction it cannot decode, given the native run of the same case:
    the meter's limitation when the native run succeeds, the program's crash when it fails too."""
    reason, specifics = undecodable
    nstatus, ndetail = run_status(native, expected, same_output)
    if nstatus is MeasureStatus.OK and reason.endswith("(AVX-512)") and not host_has_cpu_flag("avx512f"):
        # the native run cannot have run it (this CPU would have raised SIGILL): a path taken only when measured
        return CaseCount(status=MeasureStatus.RUNTIME_ERROR,
                         detail=f"killed by SIGILL under valgrind ({reason}; {specifics}), an instruction this CPU "
                                "does not have (no avx512f): the native run, which succeeded, did not run it, so the "
                                "program takes another path when measured", **common)
    if nstatus is MeasureStatus.OK:
        return CaseCount(status=MeasureStatus.UNSUPPORTED_BY_METER,
                         detail=f"{reason}; {specifics}; valgrind raised SIGILL, and the native run of the same "
                                f"binary on this case succeeded ({native.cpu_seconds:.3f} s CPU)", **common)
    if nstatus is MeasureStatus.SANDBOX_ERROR:
        return CaseCount(status=nstatus, detail=f"native confirmation run: {ndetail}", **common)
    return CaseCount(status=MeasureStatus.RUNTIME_ERROR,
                     detail=f"killed by SIGILL under valgrind ({reason}; {specifics}) and the native run failed "
                            f"too: {nstatus.value} {ndetail}".strip(), **common)


@dataclass
class InstructionRun:
    """:func:`measure_instructions`' result: one :class:`CaseCount` per case (in order; cut short after the first
    failure when ``stop_on_failure``), the total when every case counted, the meter's fingerprint and the cores
    the runs held (empty without ``pin``)."""

    counts: list[CaseCount]
    meter: dict[str, Any] = field(default_factory=dict)
    cores: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every case produced a count."""
        return bool(self.counts) and all(c.ok for c in self.counts)

    @property
    def total(self) -> int | None:
        """Sum of the figures (instructions, or model cycles under a cycles meter), ``None`` unless :attr:`ok`."""
        return sum(c.cost for c in self.counts) if self.ok else None  # type: ignore[misc]


def measure_instructions(binary: bytes, cases: Sequence[tuple[str, bytes, bytes | None]], *,
                         limits: Limits | None = None, same_output: Callable[[bytes, bytes], bool] | None = None,
                         stop_on_failure: bool = True, valgrind: Valgrind | None = None,
                         pin: bool = True, workers: int | None = None) -> InstructionRun:
    """Count the instructions of ``binary`` (an executable's bytes, run as ``/prog/main``) on each case
    ``(name, stdin, expected stdout or None)``.

    ``limits``: the program's native per-run limits (default :class:`Limits`), scaled by :func:`valgrind_limits`.
    ``workers``: cases measured at once, each worker in a fresh sandbox of its own (default: one per core this
    process may use, at most one per case; one when the calling thread already holds a core). Counts do not
    depend on it (they are deterministic), only the cost does. A sandbox failure is retried once in a fresh
    sandbox (``SANDBOX_ERROR`` is retried, then reported). ``pin``: every worker holds an exclusive core
    (:func:`arbiter.timing.wallclock.core_lease`). Raises :class:`ValgrindUnavailable`;
    :class:`~arbiter.sandbox.sandbox.SandboxError` when no sandbox starts.
    """
    vg = valgrind or find_valgrind()
    native = limits or Limits()
    job = _CaseJob(binary, list(cases), vg, native, same_output, stop_on_failure)
    n = _worker_count(workers, len(job.cases))
    if n <= 1:
        job.work(pin)
    else:
        threads = [threading.Thread(target=job.work, args=(pin,), name=f"arbiter-count-{i}", daemon=True)
                   for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if job.error is not None:
        raise job.error
    return InstructionRun(counts=job.in_order(), meter=vg.fingerprint(), cores=sorted(job.cores))


def _worker_count(workers: int | None, n_cases: int) -> int:
    if workers is not None:
        return max(1, min(int(workers), n_cases))
    if held_core() is not None:  # inside a caller's lease: its core only (a second lease could wait forever)
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), n_cases))


class _CaseJob:
    """The cases of one :func:`measure_instructions` call, handed out in order to its workers. With
    ``stop``, no case after the first failed one (in case order) is started, and every case before it is
    measured, so the counts are those of a sequential run."""

    def __init__(self, binary: bytes, cases: list[tuple[str, bytes, bytes | None]], vg: Valgrind, native: Limits,
                 same_output: Callable[[bytes, bytes], bool] | None, stop: bool):
        self.binary, self.cases, self.vg, self.native, self.same_output, self.stop = (
            binary, cases, vg, native, same_output, stop)
        self.vlim = valgrind_limits(native)
        self.sblim = measuring_sandbox_limits(self.vlim, native)
        self.results: dict[int, CaseCount] = {}
        self.cores: set[int] = set()
        self.error: BaseException | None = None
        self._next, self._first_failure = 0, len(cases)
        self._lock = threading.Lock()

    def _take(self) -> int | None:
        with self._lock:
            i = self._next
            if i >= len(self.cases) or i > self._first_failure or self.error is not None:
                return None
            self._next += 1
            return i

    def _done(self, i: int, c: CaseCount) -> None:
        with self._lock:
            self.results[i] = c
            if not c.ok and self.stop:
                self._first_failure = min(self._first_failure, i)

    def work(self, pin: bool) -> None:
        """Measure cases until none is left, in a sandbox of this worker's (on a core of its own with ``pin``)."""
        try:
            with core_lease() if pin else contextlib.nullcontext() as core:
                if core is not None:
                    with self._lock:
                        self.cores.add(core)
                self._measure_cases()
        except BaseException as exc:  # noqa: BLE001 - raised again by the caller's thread
            with self._lock:
                self.error = self.error or exc

    def _measure_cases(self) -> None:
        sb: Sandbox | None = None
        try:
            while (i := self._take()) is not None:
                name, stdin, expected = self.cases[i]
                sb = sb or Sandbox(files={"main": self.binary}, limits=self.sblim, mounts=self.vg.mounts)
                c = self._count(sb, name, stdin, expected)
                if c.status is MeasureStatus.SANDBOX_ERROR:
                    sb.close()
                    sb = Sandbox(files={"main": self.binary}, limits=self.sblim, mounts=self.vg.mounts)
                    c = self._count(sb, name, stdin, expected)
                self._done(i, c)
        finally:
            if sb is not None:
                sb.close()

    def _count(self, sb: Sandbox, name: str, stdin: bytes, expected: bytes | None) -> CaseCount:
        return count_instructions(sb, ("/prog/main",), stdin, limits=self.vlim, expected=expected,
                                  same_output=self.same_output, case=name, valgrind=self.vg,
                                  native_limits=self.native)

    def in_order(self) -> list[CaseCount]:
        """The counts in case order, up to the first failure when stopping on failure."""
        out: list[CaseCount] = []
        for i in range(len(self.cases)):
            c = self.results.get(i)
            if c is None:
                break
            out.append(c)
            if not c.ok and self.stop:
                break
        return out
