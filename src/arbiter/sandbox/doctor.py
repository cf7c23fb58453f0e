"""What this machine offers for running untrusted code, checked for real.

:func:`diagnose` starts a real sandbox and looks from inside it (PID namespace, network, uid,
read-only system, what is visible), and reports the host's tools. ``isolated`` is True only when
a sandbox started and every isolation check passed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from arbiter.sandbox import cgroups, seccomp
from arbiter.sandbox.config import UNSAFE_ENV, SandboxConfig, unsafe_requested
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox, SandboxError


@dataclass
class Check:
    """One line of the report: ``ok`` is None for information only."""

    name: str
    ok: bool | None
    detail: str


@dataclass
class Diagnosis:
    """The doctor's report. ``isolated``: untrusted code can run isolated here."""

    checks: list[Check] = field(default_factory=list)
    isolated: bool = False

    def add(self, name: str, ok: bool | None, detail: str) -> None:
        self.checks.append(Check(name, ok, detail))


def _version(cmd: list[str]) -> str | None:
    exe = shutil.which(cmd[0])
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else ""


# Run inside the sandbox with the sandbox's own Python: prints facts, one per line.
_PROBE = r"""
import os, socket
ppid = os.getppid()
with open("/proc/%d/stat" % ppid) as f:
    grandparent = f.read().rsplit(")", 1)[1].split()[1]
print("pid", os.getpid(), "ppid", ppid, "grandparent", grandparent)
print("uid", os.getuid(), "gid", os.getgid())
print("ifaces", ",".join(sorted(os.listdir("/sys/class/net"))) if os.path.isdir("/sys/class/net") else "ifaces none")
try:
    socket.create_connection(("1.1.1.1", 53), timeout=1)
    print("network reachable")
except OSError as e:
    print("network unreachable", type(e).__name__)
for p in ("/etc/shadow", "/root", "/home"):
    print("visible" if os.path.exists(p) else "hidden", p)
try:
    open("/usr/arbiter-doctor", "w")
    print("usr writable")
except OSError:
    print("usr readonly")
print("procs", len([d for d in os.listdir("/proc") if d.isdigit()]))
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(29, 0, 4096, 0o1000 | 0o600)  # shmget(IPC_PRIVATE): refused by the seccomp filter
print("sysv-ipc", "blocked" if r == -1 and ctypes.get_errno() == 1 else "allowed")
import resource
try:  # the server's own limit, set to what it is: refused by the seccomp filter
    resource.prlimit(1, resource.RLIMIT_CORE, resource.prlimit(1, resource.RLIMIT_CORE))
    print("server-limits allowed")
except PermissionError:
    print("server-limits blocked")
"""


def diagnose(config: SandboxConfig | None = None) -> Diagnosis:
    """Check bubblewrap, namespaces, cgroups, toolchains and the sandbox Python; see the module
    docstring. Never raises for a missing capability: it is reported."""
    cfg = config or SandboxConfig()
    d = Diagnosis()
    bwrap = shutil.which("bwrap") or (cfg.bwrap if os.access(cfg.bwrap, os.X_OK) else None)
    d.add("bubblewrap", bwrap is not None,
          f"{bwrap} ({_version(['bwrap', '--version'])})" if bwrap else "missing: apt-get install bubblewrap")
    ok, why = cgroups.available()
    d.add("cgroups (memory, pids, cpuacct)", ok, why if ok else f"unavailable: {why} "
          "(memory then falls back to RLIMIT_AS, processes to RLIMIT_NPROC)")
    for label, cmd in (("g++", ["g++", "--version"]), ("valgrind", ["valgrind", "--version"])):
        v = _version(cmd)
        d.add(label, v is not None, v or f"missing: apt-get install {label}")
    py_ok = os.access(cfg.python, os.X_OK)
    pv = _version([cfg.python, "-I", "-S", "-c", "import sys; print(sys.version.split()[0])"]) if py_ok else None
    d.add("python for untrusted code", py_ok, f"{cfg.python} ({pv})" if py_ok else f"{cfg.python} not found")
    if unsafe_requested():
        d.add("isolation", False, f"DISABLED by {UNSAFE_ENV}: untrusted code runs on this host unisolated")
        return d
    if bwrap is None:
        d.add("isolation", False, "impossible without bubblewrap")
        return d
    try:
        with Sandbox(limits=Limits(cpu_seconds=5), config=cfg) as sb:
            err = sb.load_python(_PROBE)
            ex = sb.run_python() if err is None else None
    except SandboxError as exc:
        d.add("sandbox start", False, str(exc))
        return d
    if ex is None or not ex.ok:
        d.add("sandbox probe", False, err or (ex.detail + ex.stderr.decode(errors="replace")[-300:]))
        return d
    facts = ex.stdout.decode(errors="replace")
    m = re.search(r"pid (\d+) ppid (\d+) grandparent (\d+)", facts)
    procs = re.search(r"procs (\d+)", facts)
    # the program's parent is the forker, whose parent is the sandbox's own PID 1 (the server);
    # /proc shows the sandbox's processes only
    d.add("pid namespace", bool(m and "1" in (m.group(2), m.group(3)) and procs
                                and int(procs.group(1)) <= 3),
          f"program pid {m.group(1)}, its forker pid {m.group(2)}, the sandbox's PID 1 above; "
          f"{procs.group(1) if procs else '?'} processes visible" if m else facts)
    net_ok = "network unreachable" in facts and ("ifaces lo" in facts or "ifaces none" in facts
                                                 or "ifaces \n" in facts)
    d.add("network namespace", "network unreachable" in facts,
          "no network (only loopback)" if net_ok else facts.split("ifaces", 1)[-1].splitlines()[0])
    uid = re.search(r"uid (\d+)", facts)
    d.add("unprivileged uid", bool(uid and uid.group(1) != "0"), f"uid {uid.group(1) if uid else '?'} inside")
    hidden = "visible" not in facts
    d.add("judge files hidden", hidden, "/etc/shadow, /root, /home not visible" if hidden else facts)
    blocked = "sysv-ipc blocked" in facts and "server-limits blocked" in facts
    d.add("seccomp filter", blocked if seccomp.filter_bytes() is not None else None,
          "System V IPC, message queues, keyrings, ptrace, io_uring, bpf, 32-bit system calls and "
          "changes to the sandbox server's limits and priorities refused"
          if blocked else "no filter: x86-64 only" if seccomp.filter_bytes() is None else "filter NOT active")
    d.add("read-only system", "usr readonly" in facts, "/usr is read-only" if "usr readonly" in facts else "/usr writable!")
    d.isolated = all(c.ok for c in d.checks if c.name in (
        "bubblewrap", "pid namespace", "network namespace", "unprivileged uid", "judge files hidden",
        "read-only system", "python for untrusted code"))
    d.add("isolation", d.isolated, "untrusted code runs isolated" if d.isolated else "NOT isolated")
    return d
