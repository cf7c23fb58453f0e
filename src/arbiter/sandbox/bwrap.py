"""The command line that starts a sandbox: bubblewrap's argv around the guest server.

Pure functions of their arguments (:func:`root_layout_args` reads which of ``/bin``, ``/lib``...
are symbolic links). The namespaces, mounts and why are in docs/sandbox.md ("The sandbox").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

#: Where the guest package is mounted inside the sandbox, and its start-up script.
GUEST_MOUNT = "/arbiter/guest"
GUEST_MAIN = GUEST_MOUNT + "/__main__.py"
#: Namespaces and privileges: new user, PID, mount, network, IPC, UTS and cgroup namespaces, no
#: nested user namespaces, the server as PID 1, no capabilities.
NAMESPACE_FLAGS = ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                   "--new-session", "--as-pid-1", "--cap-drop", "ALL", "--hostname", "sandbox")
#: What the zygote (PID 1, never runs untrusted code) keeps, in the sandbox's own user namespace
#: only: a session's new namespaces, its fresh /proc, tmpfs and /prog mounts and hostname
#: (SYS_ADMIN), its loopback brought up (NET_ADMIN), dropping the bounding set (SETPCAP). Every
#: session server drops all of them before its first request (docs/sandbox.md, "Warm pool").
ZYGOTE_CAPS = ("--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")
#: The writable tmpfs dirs (path, mode), each ``scratch_bytes`` big, wiped after every run.
SCRATCH_MOUNTS = (("/tmp", "1777"), ("/dev/shm", "1777"), ("/work", "0755"))
SCRATCH_DIRS = tuple(d for d, _ in SCRATCH_MOUNTS)
#: Files of ``/etc`` the dynamic loader and the C library read (when present).
ETC_FILES = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
             "/etc/localtime")
#: The CPUs a program is told are online (``os.cpu_count()``, ``std::thread::hardware_concurrency()``,
#: ``multiprocessing.Pool()``'s size: the C library reads this file first), the same on every host, so a
#: pool sized by it fits a case's process and memory limits on a 128-core node as on this one.
VISIBLE_CPUS = 2
#: The file shown at ``/sys/devices/system/cpu/online`` (it reads ``0-1``: :data:`VISIBLE_CPUS`).
CPU_ONLINE_FILE = str(Path(__file__).resolve().parent.parent / "data" / "sandbox" / "cpu_online")
#: How the untrusted interpreter starts: isolated mode, no site, no .pyc writes, UTF-8 stdio, and
#: :data:`VISIBLE_CPUS` (``-X cpu_count``: Python 3.13's pools size by the CPU affinity, the host's;
#: an older Python ignores it).
PYTHON_FLAGS = ("-I", "-S", "-B", "-X", "utf8", "-X", f"cpu_count={VISIBLE_CPUS}")


def root_layout_args() -> list[str]:
    """``/usr`` read-only, the top-level ``/bin``, ``/lib``... as they are on the host (symbolic
    links or read-only binds) and :data:`ETC_FILES`."""
    args: list[str] = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    for etc in ETC_FILES:
        args += ["--ro-bind-try", etc, etc]
    return args


def server_args(in_fd: int, out_fd: int, site: Sequence[str],
                scratch: Sequence[str] = (), zygote: bool = False, filtered: int = 0) -> list[str]:
    """The guest server's own arguments: its two pipe ends, scratch dirs, extra ``sys.path``,
    whether it is a zygote (one server per session), and whether it runs under arbiter's
    seccomp filter (:mod:`arbiter.sandbox.seccomp`: no program can change PID 1's state), as
    the filter's descriptor floor (0: no filter)."""
    args = [str(in_fd), str(out_fd)]
    if scratch:
        args += ["--scratch", ":".join(scratch)]
    if zygote:
        args += ["--zygote", "1"]
    if filtered:
        args += ["--filtered", str(filtered)]
    return args + ["--site", ":".join(site)]


@dataclass(frozen=True)
class BwrapPlan:
    """Everything :func:`bwrap_argv` needs (host paths unless said otherwise)."""

    bwrap: str
    python: str
    root_layout: Sequence[str]
    ro_binds: Sequence[str]  # shown read-only at the same path (the interpreter's prefix...)
    scratch_bytes: int
    prog_dir: str  # shown read-only as /prog
    guest_dir: str  # the guest package, shown read-only as GUEST_MOUNT
    mounts: Sequence[tuple[str, str]]  # (host path, sandbox path), read-only
    seccomp_fd: int  # -1: no filter
    fd_floor: int  # the filter's descriptor floor (seccomp.fd_floor)
    info_fd: int  # where bwrap writes the server's pid
    in_fd: int
    out_fd: int
    site: Sequence[str]
    zygote: bool = True  # PID 1 is the zygote (sessions); False: the server itself, no capability
    inside_ids: tuple[int, int] | None = None  # (uid, gid) shown inside; None: the host's own


def bwrap_argv(plan: BwrapPlan) -> list[str]:
    """The argv that starts bwrap with the guest server as the sandbox's PID 1."""
    argv = [plan.bwrap, *NAMESPACE_FLAGS, *(ZYGOTE_CAPS if plan.zygote else ()), *plan.root_layout]
    for d in plan.ro_binds:
        argv += ["--ro-bind", d, d]
    argv += ["--proc", "/proc", "--dev", "/dev", "--ro-bind", CPU_ONLINE_FILE, "/sys/devices/system/cpu/online"]
    for d, mode in SCRATCH_MOUNTS:
        argv += ["--perms", mode, "--size", str(plan.scratch_bytes), "--tmpfs", d]
    argv += ["--ro-bind", plan.prog_dir, "/prog", "--ro-bind", plan.guest_dir, GUEST_MOUNT]
    for host, inside in plan.mounts:
        argv += ["--ro-bind", host, inside]
    if plan.seccomp_fd >= 0:
        argv += ["--seccomp", str(plan.seccomp_fd)]
    if plan.inside_ids is not None:
        argv += ["--uid", str(plan.inside_ids[0]), "--gid", str(plan.inside_ids[1])]
    return argv + ["--remount-ro", "/", "--chdir", "/work", "--info-fd", str(plan.info_fd),
                   plan.python, *PYTHON_FLAGS, GUEST_MAIN,
                   *server_args(plan.in_fd, plan.out_fd, plan.site, zygote=plan.zygote,
                               filtered=plan.fd_floor if plan.seccomp_fd >= 0 else 0)]


def unisolated_argv(python: str, guest_main: str, in_fd: int, out_fd: int,
                    scratch: Sequence[str], site: Sequence[str]) -> list[str]:
    """The argv of the guest server run directly on the host (only with the loud opt-in)."""
    return [python, *PYTHON_FLAGS, guest_main, *server_args(in_fd, out_fd, site, scratch)]
