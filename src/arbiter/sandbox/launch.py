"""Starting a sandbox's first process: bwrap around the guest server (unisolated: the server
itself), with the two pipes of its protocol, bwrap's info pipe and the seccomp filter.

Exports: :func:`launch` (returns a :class:`Launched`), :data:`GUEST_DIR`. The namespaces and
mounts: :mod:`arbiter.sandbox.bwrap`; see docs/sandbox.md ("The sandbox").
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from arbiter.sandbox import bwrap, hostdirs, hostuid, seccomp
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.errors import SandboxError
from arbiter.sandbox.guest.protocol import DEFAULT_ENV
from arbiter.sandbox.limits import Limits

#: The guest server's folder (bind-mounted into the sandbox) and its start-up script.
GUEST_DIR = Path(__file__).with_name("guest")
SERVER_PATH = GUEST_DIR / "__main__.py"
_ROOT_LAYOUT: list[str] | None = None


@dataclass
class Launched:
    """A started sandbox process and the judge's ends of its pipes (``info_r`` -1 unisolated)."""

    proc: subprocess.Popen
    to_server: int
    from_server: int
    info_r: int
    uid_lease: hostuid.UidLease | None = None  # its host uid (as root), released once it is gone


def launch(config: SandboxConfig, limits: Limits, mounts: Sequence[tuple[str | None, str]], tmp: str,
           files: Mapping[str, bytes]) -> Launched:
    """Start the sandbox whose host folder is ``tmp`` (``files`` in its ``prog`` folder when
    unisolated; a mount whose host path is None shows ``tmp/empty``). Raises SandboxError."""
    if config.isolated:
        check_cpu_view(bwrap.CPU_ONLINE_FILE)  # (before any descriptor is made: nothing to close)
    prog = hostdirs.write_prog(tmp, {} if config.isolated else files)
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty, 0o755)
    os.chmod(empty, 0o755)
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    info_r, info_w = os.pipe() if config.isolated else (-1, -1)
    seccomp_fd = -1
    floor = seccomp.fd_floor()
    bpf = seccomp.filter_bytes(floor) if config.isolated else None
    if bpf is not None:
        seccomp_fd = os.memfd_create("seccomp")  # bwrap reads the filter from it
        os.write(seccomp_fd, bpf)
        os.lseek(seccomp_fd, 0, os.SEEK_SET)
    mounts = [(host or empty, inside) for host, inside in mounts]
    kwargs: dict[str, Any] = {}
    uid_lease = None
    try:
        if os.geteuid() == 0 and config.isolated:
            uid_lease = hostuid.lease()
            kwargs.update(user=uid_lease.uid, group=config.gid, extra_groups=[])
        argv, env, cwd = _command(config, limits, mounts, tmp, prog, to_r, from_w, info_w, seccomp_fd, floor,
                                  uid_lease is not None)
        pass_fds = tuple(fd for fd in (to_r, from_w, info_w, seccomp_fd) if fd >= 0)
        proc = subprocess.Popen(argv, pass_fds=pass_fds, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kwargs)
    except OSError as exc:
        for fd in (to_r, to_w, from_r, from_w, info_r, info_w, seccomp_fd):
            if fd >= 0:
                os.close(fd)
        if uid_lease is not None:
            uid_lease.release()
        raise SandboxError(f"cannot start the sandbox: {exc}") from exc
    for fd in pass_fds:
        os.close(fd)
    return Launched(proc, to_w, from_r, info_r, uid_lease)


def check_cpu_view(path: str) -> None:
    """Raise SandboxError unless ``path`` (the sandbox's ``/sys/devices/system/cpu/online``) is a
    file anyone may read: the C library would ignore an unreadable one and count the host's CPUs."""
    try:
        readable = os.stat(path).st_mode & 0o004
    except OSError as exc:
        raise SandboxError(f"cannot start the sandbox: its CPU view {path} is missing ({exc})") from exc
    if not readable:
        raise SandboxError(f"cannot start the sandbox: its CPU view {path} is not readable by everyone "
                           "(programs would see the host's CPUs); chmod 644 it")


def _command(config: SandboxConfig, limits: Limits, mounts: Sequence[tuple[str, str]], tmp: str,
             prog: str, to_r: int, from_w: int, info_w: int, seccomp_fd: int, fd_floor: int,
             own_uid: bool) -> tuple[list[str], dict[str, str], str]:
    """``(argv, env, cwd)`` that start the server (in bwrap unless unisolated); ``own_uid``: the
    sandbox runs as a host uid of its own, shown inside as ``config.uid``."""
    global _ROOT_LAYOUT
    env = dict(DEFAULT_ENV)
    site = config.python_site or ()
    if config.isolated:
        if _ROOT_LAYOUT is None:
            _ROOT_LAYOUT = bwrap.root_layout_args()
        argv = bwrap.bwrap_argv(bwrap.BwrapPlan(
            bwrap=config.bwrap, python=config.python, root_layout=_ROOT_LAYOUT,
            ro_binds=config.python_ro_binds() + config.extra_ro_binds, scratch_bytes=limits.scratch_bytes,
            prog_dir=prog, guest_dir=str(GUEST_DIR), mounts=mounts, seccomp_fd=seccomp_fd,
            fd_floor=fd_floor, inside_ids=(config.uid, config.gid) if own_uid else None,
            info_fd=info_w, in_fd=to_r, out_fd=from_w, site=site))
        return argv, env, "/"
    work, scratch = os.path.join(tmp, "work"), os.path.join(tmp, "tmp")
    os.mkdir(work)
    os.mkdir(scratch)
    env.update(HOME=work, TMPDIR=scratch)
    return bwrap.unisolated_argv(config.python, str(SERVER_PATH), to_r, from_w, (work, scratch), site), env, work
