"""Where valgrind is, and arbiter's own counting tool (``arbiter-count``): built at first use against the
installed valgrind, started directly, identified by :meth:`Valgrind.fingerprint`.

Why our own tool and how it refuses client requests and ``execve``: ``docs/measurement.md``.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from typing import Any

from arbiter.sandbox.guest.protocol import DEFAULT_ENV
from arbiter.timing.cycles import SIM_OPTIONS, CycleModel

__all__ = [
    "EXEC_REFUSED_LAUNCHER",
    "SANDBOX_TOOL_DIR",
    "TOOL_NAME",
    "TOOL_OPTIONS",
    "TOOL_SOURCE",
    "Valgrind",
    "ValgrindUnavailable",
    "build_counter_tool",
    "cpu_identity",
    "find_valgrind",
    "host_has_cpu_flag",
    "valgrind_available",
]


class ValgrindUnavailable(RuntimeError):
    """valgrind (or ``prlimit``) is not installed where the sandbox can see it. Install the Debian packages
    ``valgrind`` and ``util-linux`` (``make sysdeps`` does)."""


#: ``VALGRIND_LAUNCHER`` given to the tool: a path that does not exist, so an ``execve`` by the program fails and
#: valgrind stops with "EXEC FAILED" instead of running an uncounted program.
EXEC_REFUSED_LAUNCHER = "/nonexistent/arbiter-refuses-execve"


#: The counting tool (built by :func:`build_counter_tool`) and its options. ``--tool=`` names it so that valgrind
#: preloads no tool library; ``--command-line-only=yes`` ignores ``~/.valgrindrc``, ``./.valgrindrc`` and
#: ``$VALGRIND_OPTS``; ``--smc-check=all``: every translation checks its code at entry, wherever the code lives
#: (``docs/measurement.md``, "Tool options", "Code that changes under the meter").
TOOL_NAME = "arbiter-count"
TOOL_OPTIONS: tuple[str, ...] = (
    f"--tool={TOOL_NAME}", "--vgdb=no", "--trace-children=yes", "--command-line-only=yes", "--smc-check=all",
)


#: The C source of the counting tool (package data).
TOOL_SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "valgrind",
                           "arbiter_count.c")


#: Detached debug symbols; hidden in measuring sandboxes (see :attr:`Valgrind.mounts`).
DEBUGINFO_DIR = "/usr/lib/debug"


_LIB_DIRS = ("/usr/libexec/valgrind", "/usr/lib/x86_64-linux-gnu/valgrind", "/usr/lib/aarch64-linux-gnu/valgrind",
             "/usr/lib/valgrind", "/usr/local/libexec/valgrind", "/usr/local/lib/valgrind")


_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i386": "x86", "i686": "x86",
         "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}


#: Where a measuring sandbox shows the counting tool's directory (read-only; never under a scratch dir).
SANDBOX_TOOL_DIR = "/arbiter-count"


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
    - ``cycle_model``: the cycle model of a cycles meter (:meth:`with_cycles`), ``None`` for instructions.
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
    cycle_model: CycleModel | None = None

    def with_cycles(self, model: CycleModel) -> "Valgrind":
        """This meter with cache and branch simulation on (:data:`~arbiter.timing.cycles.SIM_OPTIONS`) and
        ``model`` turning its events into cycles (the ``cycles`` measure)."""
        base = tuple(o for o in self.options if o not in SIM_OPTIONS)
        return replace(self, options=base + SIM_OPTIONS, cycle_model=model)

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
        empty directory over ``/usr/lib/debug`` (valgrind would otherwise read glibc's detached debug symbols at
        every start, which costs start-up time and never changes a count)."""
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
        model = {} if self.cycle_model is None else {"cycle_model": self.cycle_model.fingerprint()["model"],
                                                     "caches": self.cycle_model.fingerprint()["caches"]}
        return {**model, "meter": f"valgrind-{TOOL_NAME}" + ("-cycles" if model else ""), "valgrind": self.version, "arch": self.arch,
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
    model, flags = _cpuinfo()
    return (model or platform.processor() or platform.machine(),
            hashlib.sha256(" ".join(flags).encode()).hexdigest()[:16])


def host_has_cpu_flag(flag: str) -> bool:
    """Whether the host CPU lists ``flag`` (e.g. ``"avx512f"``) in ``/proc/cpuinfo``; False when unreadable."""
    return flag in _cpuinfo()[1]


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> tuple[str, tuple[str, ...]]:
    """The first ``model name`` and the sorted ``flags`` (``Features`` on arm64) of ``/proc/cpuinfo`` ("" and
    none when unreadable)."""
    model, flags = "", None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key in ("flags", "Features") and flags is None:
                    flags = tuple(sorted(value.split()))
                if model and flags is not None:
                    break
    except OSError:
        pass
    return model, flags or ()


#: Where the static libraries of valgrind's core live (``libcoregrind-<plat>.a``, ``libvex-<plat>.a``; Debian's
#: ``valgrind`` package ships them for external tools, as does Fedora's ``valgrind-devel``).
_CORE_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu/valgrind", "/usr/lib64/valgrind", "/usr/lib/valgrind",
                  "/usr/local/lib/valgrind", "/usr/libexec/valgrind")


_TOOL_CFLAGS = ("-O2", "-g0", "-fno-stack-protector", "-fno-builtin", "-fno-strict-aliasing", "-fno-pic", "-fno-pie",
                "-Wall", "-Werror=implicit-function-declaration")


def build_counter_tool(arch: str, version: str, out_dir: str | None = None) -> str:
    """The path of the counting tool (:data:`TOOL_SOURCE`) for valgrind platform ``arch`` (e.g. ``"amd64-linux"``),
    built with the host's ``gcc`` against that valgrind's core libraries into ``out_dir`` (default:
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
