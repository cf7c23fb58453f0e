"""Exact instruction counts of a native program, measured under valgrind (our tool, ``arbiter-count``) inside the
sandbox.

Why instructions: DESIGN.md "Speed" makes instruction counts the default measurement for speedups because they
are deterministic; PIE gets the same property from gem5 (``reference/pie.md`` §1: "each test is simulated once,
because the result is deterministic") and §3 names valgrind's cachegrind/callgrind as the gem5-free way to get it.
What they miss: cache and memory effects (pie.md §3) and all kernel work (``execve``, dynamic loading's
``mmap``/page faults, reads and writes). On tiny inputs the kernel's share of a native run dominates, so
instruction speedups come out far larger than time speedups: ``bench/pie.py`` measures 26.8x in instructions and
2.4x in CPU time for the same pair on PIE-sized inputs. Like the card's gem5 figures, report them with the startup
floor (:func:`arbiter.timing.compare.startup_floor`) and prefer cases with non-trivial work.

How one case is counted (:func:`count_instructions`)
----------------------------------------------------
The untrusted binary runs inside the caller's :class:`~arbiter.sandbox.sandbox.Sandbox` (valgrind lives under
``/usr``, which the sandbox shows read-only; the tool is mounted read-only from the host, :attr:`Valgrind.mounts`),
with the case input on stdin::

    prlimit --nofile=N:N --nproc=1:1 -- <private dir>/arbiter-count-<arch>-linux --tool=arbiter-count --vgdb=no
        --trace-children=yes --command-line-only=yes --main-stacksize=<native stack> --log-fd=3 /prog/main

- **Tool**: ``arbiter-count`` (``src/arbiter/data/valgrind/arbiter_count.c``, built by :func:`build_counter_tool`
  with gcc against the installed valgrind's ``libcoregrind``/``libvex``, in about 0.1 s once per process), our own
  valgrind tool. It counts every guest instruction (``Ir``) exactly like cachegrind ``--cache-sim=no`` (the same
  figure on the same binary, input and environment, checked by ``tests/test_valgrind_client_requests.py``; cachegrind's
  count equals lackey's ``guest instrs``), with an inline counter instead of cachegrind's per-instruction helper
  calls: 0.21 s instead of 0.31 s CPU for a 195M-instruction run, 0.116 s instead of 0.127 s for a 2.8M one.
  Earlier measurements with cachegrind (native 0.12 s on 2.86e9 instructions): ``--tool=none`` 0.79 s,
  cachegrind ``--cache-sim=no`` 2.1 s, with cache simulation 4.5 s, callgrind 6.0 s, lackey 22 s.
  Start-up: 0.09 s CPU for an empty program, 0.14 s with ``<iostream>`` (native: 1 ms), once debug symbols are
  hidden (:attr:`Valgrind.mounts`). ``bench/pie.py`` prints the cost per case.
- **Client requests are refused** (``client_request``): a client request is the "special instruction preamble"
  (amd64: ``rolq $3, $13, $61, $51 %rdi``) then ``xchgq %rbx,%rbx``, with ``%rax`` pointing at the request block;
  ``VALGRIND_NON_SIMD_CALL0..3`` (request 0x1101-0x1104) make valgrind's core call a function of the program
  *natively*, so none of its instructions is counted, while without valgrind the same program just computes (it
  passes every test). Valgrind has no option to refuse or trace client requests (``--trace-flags`` front-end traces
  show them but cost 15 MB of log and 7 s for a trivial program), and a scan of the binary for the preamble misses
  code written at run time and preambles in libraries the program can map (valgrind's own ``vgpreload_core``,
  ``libglib``, ...). But every request ends a superblock with jump kind ``Ijk_ClientReq``, which the tool sees
  before the block runs, wherever its bytes come from: it adds a call that reads the request number and, unless
  it is one of valgrind's own preload plumbing requests (``FREERES_DONE``, ``ADD_IFUNC_TARGET``: they run no
  program code), logs ``arbiter-count: refused client request 0x...`` and ends the process before the core acts.
  :func:`count_instructions` turns that line (:func:`refused_client_request`) into
  :attr:`MeasureStatus.CLIENT_REQUEST` with :data:`CLIENT_REQUEST_REASON`, checked before anything else: never a
  figure. A program can write such a line itself, but only to be refused. ``docs/measurement.md`` lists what
  remains possible.
- **Output channel**: valgrind logs to descriptor 3 (``--log-fd=3``), a pipe the sandbox's server reads while
  the program runs (:meth:`Sandbox.run` ``log_fd=``). The count
  is the **last** line of that log, the summary ``==PID== I refs: N`` (cachegrind's format), written at exit after the program
  has stopped. A program can reopen the pipe through ``/proc/thread-self/fd`` and write a fake summary, but only
  before the real one, which always comes last. The program's stdout and stderr are never mixed with it.
- **No escape from counting**: the tool binary is started directly (not through ``/usr/bin/valgrind``, Debian's
  wrapper script, which also injects ``GLIBCXX_FORCE_NEW`` and ``LD_LIBRARY_PATH`` into the program's
  environment) with ``VALGRIND_LAUNCHER`` pointing at a path that does not exist and ``--trace-children=yes``:
  an ``execve`` by the program makes valgrind exec that launcher, which fails, and valgrind dies with
  "EXEC FAILED" (exit 101) before writing any count. So a program cannot do its work and then replace itself by a
  native process that exits cheaply (or writes a fake count). ``RLIMIT_NPROC = 1`` makes ``fork``/``clone`` fail,
  so no child can do uncounted work either. Consequence: measured programs must be single-threaded, single-process
  (PIE/CodeNet programs are).
- **Programs that create processes or threads** (``creates_processes``): valgrind follows a ``fork`` child (it runs
  under valgrind too, whatever ``--trace-children`` says, with its own count in the log), so counting only the
  program's process would miss the child's work, and adding counts would miss what happens in parallel. So such a
  program is not measurable: its ``fork``/``clone``/``pthread_create`` fails with ``EAGAIN`` under
  ``RLIMIT_NPROC = 1``, and whatever it does then (exit early, crash on ``std::system_error``, print nothing) is a
  failed run. :func:`process_probe` tells that failure apart from the program's own: the same binary on the same
  case runs natively twice in the same sandbox, once with process creation refused the same way
  (:func:`single_process_argv`) and once allowed (the sandbox's ``pids.max``); failing only when refused means the
  program creates processes (or threads), and the run is :attr:`MeasureStatus.CREATES_PROCESSES` with the reason
  :data:`CREATES_PROCESSES_REASON` ("program creates processes; its cost cannot be measured"), never a wrong answer
  and never a figure. The probe runs only after a failed run (``runtime_error``, ``wrong_output``, ``time_limit``,
  ``memory_limit``, ``output_limit``). Measuring sandboxes are created with the native process limit so that the
  allowed run can create them (:func:`measuring_sandbox_limits`); the valgrind run itself is always under
  ``--nproc=1:1``.
- **Known limit**: valgrind shares the process with the program, so a program written against this harness could
  still rewrite the tool's counter in memory (found through ``/proc/self/maps``); that cannot be closed inside
  valgrind. Forging the count through its output channel is closed (above). More in ``docs/measurement.md``.
- **Determinism**: same binary + same stdin + same environment give the same count (checked by
  ``tests/test_timing.py``, also with every core busy). Fixed here: argv (``/prog/main``), cwd (``/work``), the
  environment (the sandbox's default environment plus ``VALGRIND_LIB``; valgrind adds ``LD_PRELOAD`` of its core
  preload), valgrind's own address-space layout, no ASLR effect on counts. Not fixed: a program that reads the
  clock or ``/dev/urandom`` counts differently each run; glibc picks string/memory routines by CPUID, so counts
  depend on the CPU model (recorded in :meth:`Valgrind.fingerprint`).
- **RLIMIT_NOFILE**: valgrind reads it at start-up to reserve its own descriptors and aborts at exit
  (``vgPlain_safe_fd`` assertion) if it changes under it; the ``prlimit`` wrapper sets it before valgrind starts
  (and the sandbox server does not change a running program's open-file limit).

Limits (:func:`valgrind_limits`): valgrind needs more time and memory than a native run. CPU limit =
native x :data:`TIME_FACTOR` + :data:`STARTUP_SECONDS`; memory = native + :data:`MEMORY_EXTRA_BYTES` (measured
+22 to +26 MiB over native for 1 to 512 MiB programs; the translation cache grows with code size).

Statuses (:class:`MeasureStatus`): a run that crashed, hit a limit, printed a wrong answer, tried to ``execve``,
needed to create processes or produced no count is a failed measurement, never a number.

**Instructions valgrind cannot decode** (``unsupported_by_meter``): valgrind 3.19's VEX front end has no AVX-512
decoder. A program built with ``#pragma GCC target("avx512f,...")`` runs natively on a CPU that has AVX-512, but
under valgrind its first EVEX-encoded instruction makes VEX print ``vex amd64->IR: unhandled instruction bytes:
0x62 ...`` (and ``valgrind: Unrecognised instruction at address ...``) to the log, and valgrind kills the program
with ``SIGILL``. That is the meter's limitation, not the program's fault, so :func:`count_instructions` does not
report it as a crash when all of these hold: the run died of ``SIGILL``, valgrind's log reports an unhandled /
unrecognised instruction (:func:`undecodable_instruction`), and a native run of the same binary on the same case,
in the same sandbox, right after, succeeds (exit 0 within the native limits, expected output when one is given).
Then the status is :attr:`MeasureStatus.UNSUPPORTED_BY_METER` and the detail starts with a short reason
(:func:`meter_reason`, e.g. "valgrind cannot decode the program's instructions (AVX-512)"); callers measure the
pair another way (the pipelines fall back to :func:`arbiter.timing.compare.compare` ``method="wall"``). When the
native run fails too, the program really crashes: ``runtime_error``.
"""

from __future__ import annotations

import atexit
import contextlib
import re
import enum
import signal as _signal
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.sandbox.server_main import DEFAULT_ENV

__all__ = [
    "CLIENT_REQUEST_REASON",
    "CREATES_PROCESSES_REASON",
    "EXEC_REFUSED_LAUNCHER",
    "MEMORY_EXTRA_BYTES",
    "STARTUP_SECONDS",
    "TIME_FACTOR",
    "TOOL_NAME",
    "TOOL_OPTIONS",
    "build_counter_tool",
    "refused_client_request",
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

#: CPU-time factor of a valgrind run over the native limit. Measured: cachegrind ``--cache-sim=no`` costs 18.5x
#: native CPU on a dense vectorised loop (the worst case seen), 5-10x on ordinary scalar code.
TIME_FACTOR = 30.0
#: Seconds added to a valgrind run's CPU limit for valgrind's own start-up (0.2 s measured; margin for busy hosts).
STARTUP_SECONDS = 5.0
#: Memory added to a valgrind run's limit: valgrind's own heap, translation cache and the (tiny, never simulated)
#: cache tables. Measured +22..+26 MiB over native RSS.
MEMORY_EXTRA_BYTES = 128 * MiB
#: stderr kept from a valgrind run (valgrind's own messages land there too).
STDERR_BYTES = 256 * 1024
#: ``VALGRIND_LAUNCHER`` given to the tool: a path that does not exist, so an ``execve`` by the program fails and
#: valgrind stops with "EXEC FAILED" instead of running an uncounted program.
EXEC_REFUSED_LAUNCHER = "/nonexistent/arbiter-refuses-execve"
#: The tool and its options: our own counting tool (:data:`TOOL_NAME`, built by :func:`build_counter_tool`), which
#: counts exactly what cachegrind ``--cache-sim=no`` counts (``Ir``) and refuses client requests (module docstring).
#: ``--tool=`` names it so that valgrind preloads no tool library (there is no ``vgpreload_arbiter-count``); without
#: it valgrind would preload memcheck's malloc replacement. ``--command-line-only=yes``: no options from
#: ``~/.valgrindrc``, ``./.valgrindrc`` or ``$VALGRIND_OPTS`` (a file a program left in ``/work`` cannot reach the
#: next run's meter).
TOOL_NAME = "arbiter-count"
TOOL_OPTIONS: tuple[str, ...] = (
    f"--tool={TOOL_NAME}", "--vgdb=no", "--trace-children=yes", "--command-line-only=yes",
)
#: The C source of the counting tool (package data).
TOOL_SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "valgrind",
                           "arbiter_count.c")
#: The reason of a :attr:`MeasureStatus.CLIENT_REQUEST` failure (the start of its detail).
CLIENT_REQUEST_REASON = "program makes valgrind client requests; its cost cannot be measured"
#: The tool's line when it refuses a client request (``==PID== arbiter-count: refused client request 0x1102``).
_REFUSED = re.compile(rb"^==\d+== arbiter-count: refused client request (0x[0-9a-fA-F]+)", re.MULTILINE)
#: The reason of a :attr:`MeasureStatus.CREATES_PROCESSES` failure (the start of its detail).
CREATES_PROCESSES_REASON = "program creates processes; its cost cannot be measured"
#: The ``prlimit`` option that refuses every new process or thread of the measured program (``RLIMIT_NPROC`` = 1:
#: the sandbox's server already counts as one process of the same user, so ``fork``/``clone`` fail with EAGAIN).
NO_NEW_PROCESSES = "--nproc=1:1"
#: The descriptor valgrind logs to (``--log-fd``): a pipe read by the sandbox's server (:meth:`Sandbox.run`
#: ``log_fd=``); cachegrind's summary line (``==PID== I refs: N``) is the last thing valgrind writes there.
LOG_FD = 3
_SUMMARY = re.compile(rb"^==\d+== I\s+refs:\s+([\d,]+)\s*$")
#: Detached debug symbols; hidden in measuring sandboxes (see :attr:`Valgrind.mounts`).
DEBUGINFO_DIR = "/usr/lib/debug"
_LIB_DIRS = ("/usr/libexec/valgrind", "/usr/lib/x86_64-linux-gnu/valgrind", "/usr/lib/aarch64-linux-gnu/valgrind",
             "/usr/lib/valgrind", "/usr/local/libexec/valgrind", "/usr/local/lib/valgrind")
_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i386": "x86", "i686": "x86",
         "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}


class ValgrindUnavailable(RuntimeError):
    """valgrind (or ``prlimit``) is not installed where the sandbox can see it. Install the Debian packages
    ``valgrind`` and ``util-linux`` (``make sysdeps`` does)."""


class MeasureStatus(str, enum.Enum):
    """How one measured run ended.

    ``ok`` is the only status that carries a figure. ``runtime_error`` / ``time_limit`` / ``memory_limit`` /
    ``output_limit`` come from the sandbox (non-zero exit or fatal signal is ``runtime_error`` even when stdout
    matched, DESIGN.md standing rules). ``wrong_output``: exit 0 but stdout differs from the expected output.
    ``exec_refused``: the program called ``execve`` (not measurable, see module docstring). ``no_count``: exit 0
    but valgrind wrote no valid count. ``sandbox_error``: our fault, to be retried and reported, never a verdict.
    ``unsupported_by_meter``: valgrind cannot run the program (an instruction its decoder does not know, e.g.
    AVX-512) while the native run of the same binary on the same case succeeded: the meter's limitation, never the
    program's fault and never a verdict; measure the pair with another method (module docstring).
    ``creates_processes``: the program needs to create processes or threads, which a measured run refuses
    (:func:`process_probe`): its cost cannot be measured by any method here (a child's or thread's work escapes
    the figure); never a wrong answer, never a figure.
    ``client_request``: the program made a valgrind client request (e.g. ``VALGRIND_NON_SIMD_CALL1``, which would run
    a function natively, uncounted); the meter refused it and stopped the run (module docstring): not measurable,
    never a figure, whatever the program printed.
    """

    OK = "ok"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    WRONG_OUTPUT = "wrong_output"
    EXEC_REFUSED = "exec_refused"
    NO_COUNT = "no_count"
    SANDBOX_ERROR = "sandbox_error"
    UNSUPPORTED_BY_METER = "unsupported_by_meter"
    CREATES_PROCESSES = "creates_processes"
    CLIENT_REQUEST = "client_request"


_FROM_SANDBOX = {
    Status.OK: MeasureStatus.OK,
    Status.RUNTIME_ERROR: MeasureStatus.RUNTIME_ERROR,
    Status.TIME_LIMIT: MeasureStatus.TIME_LIMIT,
    Status.MEMORY_LIMIT: MeasureStatus.MEMORY_LIMIT,
    Status.OUTPUT_LIMIT: MeasureStatus.OUTPUT_LIMIT,
    Status.SANDBOX_ERROR: MeasureStatus.SANDBOX_ERROR,
}


def default_same_output(actual: bytes, expected: bytes) -> bool:
    """The output comparison used when the caller gives none: equal after removing trailing whitespace of every
    line and trailing empty lines (the oracle seed card's ``trailing_whitespace`` checker).

    Correctness is the judge's job; this only makes sure a measured run computed the expected answer. Callers with
    another checker (PIE's float tolerance, tokens) pass it as ``same_output``.
    """
    def norm(b: bytes) -> list[bytes]:
        lines = [ln.rstrip() for ln in b.replace(b"\r\n", b"\n").split(b"\n")]
        while lines and not lines[-1]:
            lines.pop()
        return lines
    return norm(actual) == norm(expected)


def run_status(ex: Execution, expected: bytes | None,
               same_output: Callable[[bytes, bytes], bool] | None = None) -> tuple[MeasureStatus, str]:
    """``(status, detail)`` of one measured run: the sandbox's status, then the output check when ``expected`` is
    given (``same_output(actual, expected)``, default :func:`default_same_output`)."""
    status = _FROM_SANDBOX[ex.status]
    if status is not MeasureStatus.OK:
        return status, ex.detail
    if expected is not None:
        if ex.stdout_truncated:
            return MeasureStatus.WRONG_OUTPUT, "stdout was truncated"
        if not (same_output or default_same_output)(ex.stdout, expected):
            return MeasureStatus.WRONG_OUTPUT, "stdout differs from the expected output"
    return MeasureStatus.OK, ""


#: Failed statuses that a refused ``fork``/``clone`` can cause (the program's reaction to EAGAIN), so
#: :func:`process_probe` is asked about them.
PROBED_STATUSES = frozenset({MeasureStatus.RUNTIME_ERROR, MeasureStatus.WRONG_OUTPUT, MeasureStatus.TIME_LIMIT,
                             MeasureStatus.MEMORY_LIMIT, MeasureStatus.OUTPUT_LIMIT})


@functools.lru_cache(maxsize=None)
def find_prlimit() -> str:
    """The path of util-linux ``prlimit`` (``/usr/bin/prlimit`` or ``/bin/prlimit``; the sandbox shows ``/usr``).
    Raises :class:`~arbiter.sandbox.sandbox.SandboxError` when it is missing (install util-linux): without it no
    measured run can refuse new processes, and measuring anyway would be our fault, not the program's."""
    from arbiter.sandbox.sandbox import SandboxError

    path = next((p for p in ("/usr/bin/prlimit", "/bin/prlimit") if os.access(p, os.X_OK)), "")
    if not path:
        raise SandboxError("prlimit not found (install util-linux): measured runs need it to refuse new processes")
    return path


def single_process_argv(argv: Sequence[str], prlimit: str | None = None) -> list[str]:
    """``argv`` run under ``RLIMIT_NPROC = 1`` (``prlimit --nproc=1:1 -- argv``): the program cannot create a
    process or a thread (``fork``/``clone`` fail with EAGAIN: the sandbox's server already counts as one process of
    the same user), so no child can do work its figure misses. ``prlimit`` execs ``argv`` in the same process; its
    own start-up (about 0.7 ms CPU, measured in this sandbox: 0.8 -> 1.6 ms for ``int main() {}``) is part of
    every wall/CPU figure, the same for both programs of a comparison. Raises ``SandboxError`` without prlimit."""
    return [prlimit or find_prlimit(), NO_NEW_PROCESSES, "--", *argv]


def measuring_sandbox_limits(run_limits: Limits, native: Limits) -> Limits:
    """The sandbox-wide limits of a measuring sandbox: ``run_limits`` (e.g. :func:`valgrind_limits`) with the
    native process limit, so that :func:`process_probe`'s allowed run may create processes (the measured runs
    themselves refuse them with :func:`single_process_argv` / ``--nproc=1:1``)."""
    return run_limits.with_(processes=max(int(native.processes), int(run_limits.processes)))


def process_probe(sandbox: Sandbox, argv: Sequence[str], stdin: bytes, limits: Limits,
                  expected: bytes | None = None, same_output: Callable[[bytes, bytes], bool] | None = None, *,
                  refused_failure: tuple[MeasureStatus, str] | None = None) -> str | None:
    """Whether a failed measured run failed because the program needs to create processes or threads.

    Runs ``argv`` natively in ``sandbox`` on ``stdin`` with ``limits`` (the program's native limits), allowed to
    create processes (up to the sandbox's ``pids.max``: create ``sandbox`` with :func:`measuring_sandbox_limits`).
    ``refused_failure``: the ``(status, detail)`` of a native run with new processes refused that already failed
    (the wall method's measured run); ``None`` (valgrind: its failure may be valgrind's own) runs that refused run
    here too (:func:`single_process_argv`). Returns the detail of a
    :attr:`MeasureStatus.CREATES_PROCESSES` failure (starting with :data:`CREATES_PROCESSES_REASON`) when the
    program succeeds (exit 0 within limits, ``expected`` output when given) only when allowed to create processes;
    ``None`` when it fails either way (its own failure), succeeds either way, or a run was a sandbox error.
    Costs one or two native runs; only called after a failed measured run."""
    if refused_failure is None:
        refused = sandbox.run(single_process_argv(argv), stdin, limits)
        refused_failure = run_status(refused, expected, same_output)
    r_status, r_detail = refused_failure
    if r_status is MeasureStatus.OK or r_status is MeasureStatus.SANDBOX_ERROR:
        return None
    allowed = sandbox.run(list(argv), stdin, limits)
    a_status, _ = run_status(allowed, expected, same_output)
    if a_status is not MeasureStatus.OK:
        return None
    return (f"{CREATES_PROCESSES_REASON} (with fork/clone refused it fails: {r_status.value}"
            f"{': ' + r_detail if r_detail else ''}; allowed to create processes or threads, it succeeds; measured "
            "programs must be single-process and single-threaded)")


# ---------------------------------------------------------------------------------------------------------------
# valgrind discovery
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Valgrind:
    """Where valgrind and arbiter's counting tool are, and what identifies their counts.

    - ``lib_dir``: valgrind's library directory (``VALGRIND_LIB``), e.g. ``/usr/libexec/valgrind``.
    - ``tool``: arbiter's counting tool (``arbiter-count-amd64-linux``, :func:`build_counter_tool`), started
      directly; ``tool_sha256``: sha256[:16] of that binary.
    - ``prlimit``: path of util-linux ``prlimit``.
    - ``version``: e.g. ``"3.19.0"``.
    - ``arch``: valgrind's platform name, e.g. ``"amd64-linux"``.
    - ``cpu_model`` / ``cpu_flags_sha256``: the host CPU; glibc chooses routines by CPUID, so counts are only
      comparable on the same CPU model and flags.
    """

    lib_dir: str
    tool: str
    prlimit: str
    version: str
    arch: str
    cpu_model: str = ""
    cpu_flags_sha256: str = ""
    options: tuple[str, ...] = TOOL_OPTIONS
    hide_debuginfo: bool = True
    tool_sha256: str = ""

    @property
    def env(self) -> dict[str, str]:
        """The environment of a measured run: the sandbox's default environment (what the judge's native runs
        see) plus what the tool needs (``VALGRIND_LIB``; ``VALGRIND_LAUNCHER`` is removed by valgrind before the
        program starts)."""
        return {**DEFAULT_ENV, "VALGRIND_LIB": self.lib_dir, "VALGRIND_LAUNCHER": EXEC_REFUSED_LAUNCHER}

    @property
    def sandbox_tool(self) -> str:
        """The counting tool's path inside a measuring sandbox: a host build (in a temporary directory, which
        would sit inside the sandbox's scratch ``/tmp``) is mounted at :data:`SANDBOX_TOOL_DIR`."""
        if os.path.dirname(self.tool).startswith("/usr/"):
            return self.tool
        return os.path.join(SANDBOX_TOOL_DIR, os.path.basename(self.tool))

    @property
    def mounts(self) -> list[tuple[str, str]]:
        """Read-only mounts for a measuring sandbox: valgrind's directory when it is not under ``/usr``, and an
        empty directory over ``/usr/lib/debug``. Valgrind otherwise reads the detached debug symbols of glibc
        (``libc6-dbg``, which Debian's valgrind recommends) at every start: measured 0.19 -> 0.09 s CPU per run of
        an empty program, 0.26 -> 0.14 s with ``<iostream>``, identical counts (symbols only name functions in
        cachegrind's report; they never change what the program executes)."""
        mounts = [] if self.lib_dir.startswith("/usr/") else [(self.lib_dir, self.lib_dir)]
        tool_dir = os.path.dirname(self.tool)
        if self.sandbox_tool != self.tool:  # the counting tool, built on the host: outside the scratch dirs
            mounts.append((tool_dir, SANDBOX_TOOL_DIR))
        if self.hide_debuginfo and os.path.isdir(DEBUGINFO_DIR):
            mounts.append((_empty_dir(), DEBUGINFO_DIR))
        return mounts

    def fingerprint(self) -> dict[str, Any]:
        """What a count depends on besides the program, its input and its toolchain: the meter, its options,
        the environment's names and the CPU. Two counts are comparable only when these are equal."""
        return {"meter": f"valgrind-{TOOL_NAME}", "valgrind": self.version, "arch": self.arch,
                "tool_sha256": self.tool_sha256, "options": list(self.options), "env": sorted(self.env), "debuginfo_hidden": self.hide_debuginfo,
                "cpu_model": self.cpu_model,
                "cpu_flags_sha256": self.cpu_flags_sha256}


_process_dirs: dict[str, str] = {}


def _process_dir(prefix: str, mode: int) -> str:
    """A directory of this process on the host, named ``prefix...``, with ``mode``, removed at exit."""
    path = _process_dirs.get(prefix)
    if path is None or not os.path.isdir(path):
        path = _process_dirs[prefix] = tempfile.mkdtemp(prefix=prefix)
        os.chmod(path, mode)
        atexit.register(shutil.rmtree, path, True)
    return path


def _empty_dir() -> str:
    """A private, empty, read-only directory on the host, to hide a directory in sandboxes."""
    return _process_dir("arbiter-empty-", 0o555)


def cpu_identity() -> tuple[str, str]:
    """``(model name, sha256[:16] of the sorted CPU flags)`` of the host, from ``/proc/cpuinfo``."""
    model, flags = "", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = " ".join(sorted(value.split()))
                if model and flags:
                    break
    except OSError:
        pass
    return model or platform.processor() or platform.machine(), hashlib.sha256(flags.encode()).hexdigest()[:16]


#: Where the static libraries of valgrind's core live (``libcoregrind-<plat>.a``, ``libvex-<plat>.a``; Debian's
#: ``valgrind`` package ships them for external tools, as does Fedora's ``valgrind-devel``).
_CORE_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu/valgrind", "/usr/lib64/valgrind", "/usr/lib/valgrind",
                  "/usr/local/lib/valgrind", "/usr/libexec/valgrind")
_TOOL_CFLAGS = ("-O2", "-g0", "-fno-stack-protector", "-fno-builtin", "-fno-strict-aliasing", "-fno-pic", "-fno-pie",
                "-Wall", "-Werror=implicit-function-declaration")


def build_counter_tool(arch: str, version: str, out_dir: str | None = None) -> str:
    """The path of the counting tool (:data:`TOOL_SOURCE`) for valgrind platform ``arch`` (e.g. ``"amd64-linux"``),
    built with the host's ``gcc`` against that valgrind's core libraries (about 0.1 s) into ``out_dir`` (default:
    a private directory of this process, world-readable so that sandboxes can mount it, removed at exit; a
    subdirectory named by the sha256 of the source, the libraries and ``version``). Linked the way valgrind links
    its own tools (static, no libc, text at 0x58000000). Raises :class:`ValgrindUnavailable` naming what is
    missing (the libraries, gcc, an unsupported platform) or the compiler's message."""
    if arch != "amd64-linux":
        raise ValgrindUnavailable(f"arbiter's counting tool supports amd64-linux only, not {arch}")
    libs = [f"libcoregrind-{arch}.a", f"libvex-{arch}.a", f"libgcc-sup-{arch}.a"]
    core = next((d for d in _CORE_LIB_DIRS if all(os.path.isfile(os.path.join(d, n)) for n in libs)), "")
    headers = "/usr/include/valgrind"
    if not core or not os.path.isfile(os.path.join(headers, "pub_tool_tooliface.h")):
        raise ValgrindUnavailable(f"valgrind's tool libraries ({', '.join(libs)}) or headers ({headers}) not found; "
                                  "install valgrind's development files (Debian: valgrind; Fedora: valgrind-devel)")
    gcc = shutil.which("gcc", path="/usr/bin:/bin")
    if not gcc:
        raise ValgrindUnavailable("gcc not found: it builds arbiter's valgrind counting tool")
    h = hashlib.sha256(version.encode() + b"\0" + " ".join(_TOOL_CFLAGS).encode())
    for path in (TOOL_SOURCE, *(os.path.join(core, n) for n in libs)):
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    out_dir = os.path.join(out_dir or _private_dir(), h.hexdigest()[:24])
    tool = os.path.join(out_dir, f"{TOOL_NAME}-{arch}")
    if os.access(tool, os.X_OK):
        return tool
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".build-") as tmp:
        obj, exe = os.path.join(tmp, "tool.o"), os.path.join(tmp, "tool")
        plat = arch.replace("-", "_")
        cmds = [[gcc, *_TOOL_CFLAGS, f"-DVGA_{arch.split('-')[0]}=1", "-DVGO_linux=1", f"-DVGP_{plat}=1",
                 f"-DVGPV_{plat}_vanilla=1", f"-I{headers}", "-c", TOOL_SOURCE, "-o", obj],
                [gcc, "-o", exe, obj, "-static", "-nodefaultlibs", "-nostartfiles", "-u", "_start", "-no-pie",
                 "-Wl,--build-id=none", "-Wl,-Ttext-segment=0x58000000", os.path.join(core, libs[0]),
                 os.path.join(core, libs[1]), "-lgcc", os.path.join(core, libs[2])]]
        for cmd in cmds:
            try:
                r = subprocess.run(cmd, capture_output=True, timeout=120, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ValgrindUnavailable(f"building arbiter's valgrind counting tool failed: {exc}") from exc
            if r.returncode != 0:
                raise ValgrindUnavailable("building arbiter's valgrind counting tool failed: "
                                          + r.stderr.decode(errors="replace")[-1500:])
        os.chmod(exe, 0o755)
        os.replace(exe, tool)  # atomic: concurrent builders produce the same file
    os.chmod(out_dir, 0o755)
    return tool


#: Where a measuring sandbox shows the counting tool's directory (read-only; never under a scratch dir).
SANDBOX_TOOL_DIR = "/arbiter-count"

def _private_dir() -> str:
    """A directory of this process on the host for the counting tool."""
    return _process_dir("arbiter-valgrind-tool-", 0o755)


@functools.lru_cache(maxsize=None)
def find_valgrind(lib_dir: str | None = None) -> Valgrind:
    """Locate valgrind (``$ARBITER_VALGRIND_LIB`` or the usual library directories: the one holding
    ``vgpreload_core-<plat>.so``), build the counting tool against it (:func:`build_counter_tool`) and read its
    version.

    Cached per process. Raises :class:`ValgrindUnavailable` when valgrind, its tool libraries, gcc or ``prlimit``
    is missing or the tool does not start.
    """
    arch = _ARCH.get(platform.machine().lower())
    if arch is None:
        raise ValgrindUnavailable(f"valgrind platform unknown for machine {platform.machine()!r}")
    arch += "-linux"
    candidates = [lib_dir] if lib_dir else ([os.environ["ARBITER_VALGRIND_LIB"]]
                                            if os.environ.get("ARBITER_VALGRIND_LIB") else list(_LIB_DIRS))
    found = next((d for d in candidates if os.path.isfile(os.path.join(d, f"vgpreload_core-{arch}.so"))), "")
    if not found:
        raise ValgrindUnavailable(f"valgrind's vgpreload_core-{arch}.so not found in {', '.join(candidates)}; "
                                  "install valgrind (apt-get install valgrind)")
    lib_dir = found
    prlimit = next((p for p in ("/usr/bin/prlimit", "/bin/prlimit") if os.access(p, os.X_OK)), "")
    if not prlimit:
        raise ValgrindUnavailable("prlimit not found; install util-linux")
    version = _valgrind_version(lib_dir)
    tool = build_counter_tool(arch, version)
    env = {"VALGRIND_LIB": lib_dir, "VALGRIND_LAUNCHER": EXEC_REFUSED_LAUNCHER, "PATH": "/usr/bin:/bin"}
    try:
        out = subprocess.run([tool, f"--tool={TOOL_NAME}", "--version"], capture_output=True, timeout=30,
                             check=False, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValgrindUnavailable(f"{tool} --version failed: {exc}") from exc
    text = (out.stdout or out.stderr).decode(errors="replace").strip()
    if out.returncode != 0 or not text.startswith("valgrind-"):
        raise ValgrindUnavailable(f"{tool} --version failed: {text[:200]!r}")
    with open(tool, "rb") as f:
        tool_sha = hashlib.sha256(f.read()).hexdigest()[:16]
    model, flags = cpu_identity()
    return Valgrind(lib_dir=str(lib_dir), tool=tool, prlimit=prlimit, version=text[len("valgrind-"):],
                    arch=arch, cpu_model=model, cpu_flags_sha256=flags, tool_sha256=tool_sha)


def _valgrind_version(lib_dir: str) -> str:
    """The installed valgrind's version (``3.19.0``), from any of its tools in ``lib_dir`` (``--version``)."""
    arch_tools = sorted(n for n in os.listdir(lib_dir) if n.startswith(("none-", "cachegrind-", "memcheck-")))
    for name in arch_tools:
        try:
            out = subprocess.run([os.path.join(lib_dir, name), "--version"], capture_output=True, timeout=30,
                                 check=False, env={"VALGRIND_LIB": lib_dir, "VALGRIND_LAUNCHER":
                                                   EXEC_REFUSED_LAUNCHER, "PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired):
            continue
        text = (out.stdout or out.stderr).decode(errors="replace").strip()
        if out.returncode == 0 and text.startswith("valgrind-"):
            return text[len("valgrind-"):]
    raise ValgrindUnavailable(f"no valgrind tool in {lib_dir} reports its version")


def valgrind_available() -> bool:
    """True when :func:`find_valgrind` succeeds."""
    try:
        find_valgrind()
        return True
    except ValgrindUnavailable:
        return False


# ---------------------------------------------------------------------------------------------------------------
# limits and parsing
# ---------------------------------------------------------------------------------------------------------------

def valgrind_limits(native: Limits, *, time_factor: float = TIME_FACTOR, startup_seconds: float = STARTUP_SECONDS,
                    memory_extra_bytes: int = MEMORY_EXTRA_BYTES) -> Limits:
    """The limits of a valgrind run of a program whose native limits are ``native``.

    CPU seconds: ``native.cpu_seconds * time_factor + startup_seconds``; wall: ``1.5 x`` that + 5 s (a busy host
    delays valgrind more than the program); memory: ``native.memory_bytes + memory_extra_bytes``; stack: the
    native stack (passed to valgrind as ``--main-stacksize``: by default valgrind gives the program at most 16 MiB
    of stack, and deep recursion that passes natively would crash); stderr: at least :data:`STDERR_BYTES`;
    ``processes = 1`` (no fork, see module docstring). Factors: see :data:`TIME_FACTOR`, :data:`MEMORY_EXTRA_BYTES`.
    """
    cpu = native.cpu_seconds * time_factor + startup_seconds
    return native.with_(cpu_seconds=cpu, wall_seconds=cpu * 1.5 + 5.0, stack_bytes=native.stack,
                        memory_bytes=native.memory_bytes + memory_extra_bytes,
                        stderr_bytes=max(native.stderr_bytes, STDERR_BYTES), processes=1)


def parse_cachegrind_log(log: bytes | None) -> int:
    """The total instruction count (``Ir``) from cachegrind's log: its **last** non-empty line must be the
    summary ``==PID== I   refs:      1,234,567``.

    Only the last line counts: the log is a pipe, so whatever a program manages to write into it (it can reopen
    valgrind's descriptor through ``/proc``) comes before valgrind's summary, which is written at exit after the
    program has stopped running. Raises ValueError naming what is wrong.
    """
    if not log:
        raise ValueError("valgrind wrote no log")
    lines = [ln for ln in log.splitlines() if ln.strip()]
    m = _SUMMARY.match(lines[-1]) if lines else None
    if m is None:
        raise ValueError(f"valgrind's log does not end with the cachegrind summary: {lines[-1][:120]!r}"
                         if lines else "valgrind's log is empty")
    return int(m.group(1).replace(b",", b""))


#: VEX's message for an instruction it cannot decode (amd64: "vex amd64->IR: unhandled instruction bytes: 0x62
#: 0xD2 ..."; other front ends: "disInstr(arm64): unhandled instruction 0x..."), and valgrind's core message that
#: follows it ("valgrind: Unrecognised instruction at address 0x...").
_UNHANDLED = re.compile(rb"unhandled instruction(?: bytes)?:?\s*((?:0x[0-9A-Fa-f]+\s*)*)")
_UNRECOGNISED = re.compile(rb"valgrind: Unrecognised instruction at address")
#: x86 legacy prefixes that may precede an EVEX-encoded instruction.
_LEGACY_PREFIXES = {0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}


def undecodable_instruction(log: bytes | None) -> tuple[str, str] | None:
    """``(reason, specifics)`` when valgrind's ``log`` says it met an instruction it cannot decode, else ``None``.

    Recognised: VEX's ``unhandled instruction bytes: 0x.. 0x..`` (any front end's ``unhandled instruction``) or
    valgrind's ``Unrecognised instruction at address``. ``reason`` is short and stable, e.g. ``"valgrind cannot
    decode the program's instructions (AVX-512)"`` when the bytes are an EVEX-encoded instruction (first opcode
    byte 0x62 after legacy prefixes: AVX-512 on amd64, where 0x62 ``BOUND`` does not exist); without recognisable
    bytes the parenthesis is left out. ``specifics`` names the bytes (e.g. ``"unhandled instruction bytes 0x62 0xD2
    0xFD 0x8"``). Only the log is read; whether the run also died of SIGILL and runs natively is the caller's
    business (:func:`count_instructions`)."""
    if not log:
        return None
    m = _UNHANDLED.search(log)
    if m is None and _UNRECOGNISED.search(log) is None:
        return None
    raw = m.group(1).split() if m is not None else []
    isa = ""
    try:
        values = [int(b, 16) for b in raw]
    except ValueError:
        values = []
    i = 0
    while i < len(values) and values[i] in _LEGACY_PREFIXES:
        i += 1
    amd64 = m is not None and b"amd64" in log[max(0, m.start() - 32):m.start()]
    if amd64 and i < len(values) and values[i] == 0x62:
        isa = "AVX-512"
    reason = "valgrind cannot decode the program's instructions" + (f" ({isa})" if isa else "")
    shown = b" ".join(raw[:8]).decode("ascii", "replace")
    specifics = (f"unhandled instruction bytes {shown}" if shown else "unrecognised instruction")
    return reason, specifics


def refused_client_request(log: bytes | None) -> str | None:
    """The request number (e.g. ``"0x1102"``) of the first client request the counting tool refused, from its
    ``log`` (``==PID== arbiter-count: refused client request 0x1102``), else ``None``.

    A program can write such a line into the log itself (it can reach the pipe), but only to have itself refused;
    it cannot remove the tool's line, which the tool writes right before it ends the run."""
    m = _REFUSED.search(log or b"")
    return m.group(1).decode() if m else None


def meter_reason(detail: str) -> str:
    """The short reason of an ``unsupported_by_meter`` detail (its text before the first ``"; "``), e.g.
    ``"valgrind cannot decode the program's instructions (AVX-512)"``; ``detail`` itself when it has no ``"; "``."""
    return detail.split("; ", 1)[0]


# ---------------------------------------------------------------------------------------------------------------
# counting
# ---------------------------------------------------------------------------------------------------------------

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

    @property
    def ok(self) -> bool:
        """True when the run produced a count."""
        return self.status is MeasureStatus.OK and self.instructions is not None

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
    (default :func:`default_same_output`). Never raises for the program's behaviour: a crash, a limit, a wrong
    answer, an ``execve`` or a missing count is a :class:`CaseCount` with a failed status; a failed run of a program
    that needs to create processes or threads (refused here: ``--nproc=1:1``) is ``creates_processes``, told apart
    by :func:`process_probe` (native runs with ``native_limits``; module docstring). A run killed by
    ``SIGILL`` whose log reports an instruction valgrind cannot decode is confirmed by one native run of ``argv``
    on the same ``stdin`` with ``native_limits`` (default: ``limits``): success gives
    :attr:`MeasureStatus.UNSUPPORTED_BY_METER` (module docstring), failure ``runtime_error``. Raises
    :class:`ValgrindUnavailable` when valgrind is missing.
    """
    vg = valgrind or find_valgrind()
    nofile = max(int(limits.open_files), LOG_FD + 1)  # what the sandbox server sets (see module docstring)
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
    if ex.exit_code == 101 and b"EXEC FAILED" in (ex.log or b"") + ex.stderr:
        return CaseCount(status=MeasureStatus.EXEC_REFUSED,
                         detail="the program called execve; only a single process can be measured", **common)
    undecodable = undecodable_instruction(ex.log) if ex.signal == _signal.SIGILL else None
    if undecodable is not None:
        reason, specifics = undecodable
        native = sandbox.run(list(argv), stdin, native_limits or limits)
        nstatus, ndetail = run_status(native, expected, same_output)
        if nstatus is MeasureStatus.OK:
            return CaseCount(status=MeasureStatus.UNSUPPORTED_BY_METER,
                             detail=f"{reason}; {specifics}; valgrind raised SIGILL, and the native run of the same "
                                    f"binary on this case succeeded ({native.cpu_seconds:.3f} s CPU)", **common)
        if nstatus is MeasureStatus.SANDBOX_ERROR:
            return CaseCount(status=nstatus, detail=f"native confirmation run: {ndetail}", **common)
        return CaseCount(status=MeasureStatus.RUNTIME_ERROR,
                         detail=f"killed by SIGILL under valgrind ({reason}; {specifics}) and the native run failed "
                                f"too: {nstatus.value} {ndetail}".strip(), **common)
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
    return CaseCount(status=MeasureStatus.OK, instructions=n, **common)


@dataclass
class InstructionRun:
    """:func:`measure_instructions`' result: one :class:`CaseCount` per case (in order; cut short after the first
    failure when ``stop_on_failure``), the total when every case counted, and the meter's fingerprint."""

    counts: list[CaseCount]
    meter: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every case produced a count."""
        return bool(self.counts) and all(c.ok for c in self.counts)

    @property
    def total(self) -> int | None:
        """Sum of the counts (instructions), ``None`` unless :attr:`ok`."""
        return sum(c.instructions for c in self.counts) if self.ok else None  # type: ignore[misc]


def measure_instructions(binary: bytes, cases: Sequence[tuple[str, bytes, bytes | None]], *,
                         limits: Limits | None = None, same_output: Callable[[bytes, bytes], bool] | None = None,
                         stop_on_failure: bool = True, valgrind: Valgrind | None = None,
                         pin: bool = True) -> InstructionRun:
    """Count the instructions of ``binary`` (an executable's bytes, run as ``/prog/main``) on each case
    ``(name, stdin, expected stdout or None)`` in one fresh sandbox.

    ``limits``: the program's native per-run limits (default :class:`Limits`), scaled by :func:`valgrind_limits`.
    A sandbox failure is retried once in a fresh sandbox (DESIGN.md: ``SANDBOX_ERROR`` is retried, then reported).
    ``pin``: hold an exclusive core for the measurement (:func:`arbiter.timing.wallclock.core_lease`).
    Raises :class:`ValgrindUnavailable`; :class:`~arbiter.sandbox.sandbox.SandboxError` when no sandbox starts.
    """
    from arbiter.timing.wallclock import core_lease  # (wallclock imports this module)

    vg = valgrind or find_valgrind()
    native = limits or Limits()
    vlim = valgrind_limits(native)
    sblim = measuring_sandbox_limits(vlim, native)
    counts: list[CaseCount] = []
    with core_lease() if pin else contextlib.nullcontext():
        sb = Sandbox(files={"main": binary}, limits=sblim, mounts=vg.mounts)
        try:
            for name, stdin, expected in cases:
                c = count_instructions(sb, ("/prog/main",), stdin, limits=vlim, expected=expected,
                                       same_output=same_output, case=name, valgrind=vg, native_limits=native)
                if c.status is MeasureStatus.SANDBOX_ERROR:
                    sb.close()
                    sb = Sandbox(files={"main": binary}, limits=sblim, mounts=vg.mounts)
                    c = count_instructions(sb, ("/prog/main",), stdin, limits=vlim, expected=expected,
                                           same_output=same_output, case=name, valgrind=vg, native_limits=native)
                counts.append(c)
                if not c.ok and stop_on_failure:
                    break
        finally:
            sb.close()
    return InstructionRun(counts=counts, meter=vg.fingerprint())
