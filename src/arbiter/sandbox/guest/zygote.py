"""The zygote: PID 1 of a pooled sandbox. It never runs untrusted code; per submission (op
``session``) it starts a session server in fresh PID, mount, network, IPC and UTS namespaces
(:data:`SESSION_NAMESPACES`: fresh ``/proc``, hostname, a network with ``lo`` down); the server answers ``armed``,
then on ``go`` mounts fresh tmpfs scratch dirs and that submission's ``/prog``, drops every
capability and serves. The zygote waits for it to end and reports ``ended``; ``plans`` gives it
the page plans every later session copies ahead (:mod:`.pageplan`). Exports:
:func:`serve` (the zygote's loop), :func:`arm_session`, :func:`start_session`, :func:`write_prog`,
:func:`drop_capabilities`, :func:`mount`, :data:`SESSION_NAMESPACES`. See
docs/sandbox.md ("Warm pool", "What a session starts with").
"""

import ctypes
import os

from . import kernel, pageplan
from .counters import deny_counters
from .program import keep_prelude
from .protocol import encode_frame, read_frame_blocking, write_all

CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000
CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET = 0x04000000, 0x08000000, 0x40000000
#: What every session gets new: everything a namespace keeps without a process (TIME_WAIT
#: sockets, network counters, abstract unix sockets, SysV IPC objects, the hostname) dies with
#: its session. (User and cgroup namespaces are the sandbox's: see docs/sandbox.md.)
SESSION_NAMESPACES = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
#: The hostname of every session (bwrap's ``--hostname`` for the zygote's own).
HOSTNAME = b"sandbox"
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 38, 47, 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
#: The scratch tmpfs dirs a session gets fresh (path, mode); the same as bwrap's.
SCRATCH_MOUNTS = (("/tmp", "1777"), ("/dev/shm", "1777"), ("/work", "0755"))
#: Exit status of a session server whose set-up failed (before its hello).
SETUP_FAILED = 121


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def mount(libc, source, target, fstype, flags, data=None):
    enc = (lambda s: s.encode() if s is not None else None)
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           "mount %s" % target)


def arm_session(libc, size):
    """In the session server (PID 1 of its new namespaces), before its submission is known:
    the hostname (``lo`` stays down: no socket but a Unix one can be made, docs/sandbox.md),
    private mounts, a fresh ``/proc`` and ``/dev/pts``, ``/dev``
    read-only, fresh scratch tmpfs (``size`` bytes each) and an empty tmpfs on ``/prog`` that
    only this server writes (:func:`write_prog`); its cwd the new ``/work``; the capabilities
    it keeps only for the mounts of ``go`` (:func:`drop_bounds`)."""
    _check(libc.sethostname(HOSTNAME, len(HOSTNAME)), "sethostname")
    mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    for path, mode in SCRATCH_MOUNTS:
        mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=%s,size=%d" % (mode, size))
    mount(libc, "tmpfs", "/prog", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if os.path.isdir("/dev/pts"):
        mount(libc, "devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=620")
    mount(libc, None, "/dev", None, _RO)  # bwrap's /dev tmpfs is writable: nothing may stay there
    protect_devices(libc)
    os.chdir("/work")  # (the new one: what it forks from now on never sits in the zygote's)
    drop_bounds(libc)  # (ahead of the submission: only the capset is left for go)


_RO = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME, _ST_RELATIME = 1024, 2048, 1 << 21, 4096
#: The host's device nodes bwrap binds into ``/dev`` (mode 0666: anyone may ``utime`` them, and
#: their times are the host's, seen by every sandbox): read-only mounts, still devices.
DEVICE_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


def device_remounts():
    """``(path, mount flags)`` of each device node's read-only remount: the flags the host's
    mount locked (``nosuid``, ``noexec``, the atime ones) kept. The same in every session (a
    copy of the zygote's mounts): :func:`serve` reads them once."""
    remounts = []
    for path in DEVICE_NODES:
        if os.path.exists(path):
            kept = os.statvfs(path).f_flag
            flags = kept & (MS_NOSUID | MS_NODEV | MS_NOEXEC | _MS_NOATIME | _MS_NODIRATIME)
            flags |= _MS_RELATIME if kept & _ST_RELATIME else 0
            remounts.append((path, MS_BIND | MS_REMOUNT | MS_RDONLY | flags))
    return tuple(remounts)


#: :func:`device_remounts` as the zygote read them (None until it has).
DEVICE_REMOUNTS = None


def protect_devices(libc):
    """In each session's mount namespace (the zygote's is not its own user namespace's: it may
    not remount): the device nodes read-only (:func:`device_remounts`)."""
    for path, flags in DEVICE_REMOUNTS if DEVICE_REMOUNTS is not None else device_remounts():
        mount(libc, None, path, None, flags)


#: How a file of ``/prog`` is created: a new file, never through a link; not inherited (nothing
#: is forked while it is open: this server is single-threaded, so no process can hold it open
#: for writing when it is executed, which would fail with ETXTBSY).
_PROG_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write_prog(files, blobs):
    """The submission's files (``[[name, mode], ...]`` and their contents) into ``/prog``."""
    if len(files) != len(blobs):
        raise ValueError("%d files, %d contents" % (len(files), len(blobs)))
    for (name, mode), data in zip(files, blobs):
        if not isinstance(name, str) or "/" in name or name in ("", ".", ".."):
            raise ValueError("bad prog file name %r" % (name,))
        fd = os.open("/prog/" + name, _PROG_FILE_FLAGS, int(mode) & 0o755)
        try:
            write_all(fd, data)
            os.fchmod(fd, int(mode) & 0o755)
        finally:
            os.close(fd)


def start_session(libc, header, armed_size):
    """Once the submission is known (op ``go``) and its files are in ``/prog``
    (:func:`write_prog`): the scratch tmpfs resized to its ``scratch_bytes`` (when not the
    armed size), ``/prog`` made read-only; then drop every capability."""
    size = int(header["scratch_bytes"])
    if size != armed_size:
        for path, _ in SCRATCH_MOUNTS:
            mount(libc, None, path, None, MS_REMOUNT | MS_NOSUID | MS_NODEV, "size=%d" % size)
    mount(libc, None, "/prog", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir("/work")
    drop_capabilities(libc)


def drop_bounds(libc):
    """What can go while the server still mounts (it keeps its effective capabilities): the
    bounding and ambient sets emptied, no_new_privs (already set by bwrap for seccomp), the
    host-wide counters denied (:func:`.counters.deny_counters`). Once, when the session is armed
    (:func:`arm_session`): what it forks after inherits it all."""
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
            break  # EINVAL: past the last capability this kernel knows
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient caps")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    deny_counters(libc)  # (the session server's setsid is behind it)


def drop_capabilities(libc):
    """No capability left in any set: in a session server armed (:func:`drop_bounds` done) or
    what it forked, the effective, permitted and inheritable sets emptied; not dumpable."""
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(libc.capset(header, data), "capset")
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0 (see kernel.load_libc)


def _session(header, in_fd, out_fd, start_server, prefork):
    """Start the session server (PID 1 of new namespaces: :data:`SESSION_NAMESPACES`) and wait
    for it; returns its wait status. The server is cloned straight into its namespaces
    (:func:`.kernel.clone_process`); where that cannot be done, a helper ``unshare``s them and
    forks it (a PID namespace is only entered by a child of the one who unshared it)."""
    if kernel.TID_OFFSET is not None:
        try:
            pid = kernel.clone_process(SESSION_NAMESPACES)
        except (OSError, RuntimeError) as exc:
            _say("clone into the session's namespaces failed (%s): a helper forks it" % (exc,))
            kernel.TID_OFFSET = None
        else:
            if pid == 0:
                _session_server(_libc(), header, in_fd, out_fd, start_server, prefork, levels=1)
            return os.waitpid(pid, 0)[1]
    pid = kernel.fork()
    if pid:
        _, status = os.waitpid(pid, 0)
        return status
    code = SETUP_FAILED
    try:  # the helper
        libc = _libc()
        _check(libc.unshare(SESSION_NAMESPACES), "unshare")
        server = kernel.fork()
        if server == 0:
            _session_server(libc, header, in_fd, out_fd, start_server, prefork, levels=2)
        _, status = os.waitpid(server, 0)
        code = os.waitstatus_to_exitcode(status) & 0xFF
    except BaseException as exc:
        _say("session failed: %s: %s" % (type(exc).__name__, exc))
    kernel.EXIT(code)


def _session_server(libc, header, in_fd, out_fd, start_server, prefork, levels):
    """PID 1 of the session: armed (:func:`arm_session`; ``start_server(in_fd, out_fd)`` makes
    the server then, and returns ``(on_go, serve)``), it answers ``armed`` (with ``levels``: how
    far below the zygote it is, for the judge to find its host pid) and waits for ``go``
    (the submission): its files written (:func:`write_prog`), ``on_go(go, blank)`` (the server
    may hand an early load to the blank forker, which reads ``/prog/main.py``), then it starts
    the session (:func:`start_session`) and ``serve()`` serves until ``exit``. A ``prefork``
    before ``go`` (no reply; born in the sandbox's cgroups, so is what it forks) forks the blank
    forker ahead of the submission: ``prefork(drop)``, where ``drop()`` drops the child's
    capabilities first; what it returns is ``blank``."""
    blank = None
    try:
        armed_size = int(header["scratch_bytes"])
        os.setsid()  # a session of its own: its own autogroup and process group
        arm_session(libc, armed_size)
        on_go, serve_session = start_server(in_fd, out_fd)  # (ahead of the submission too)
        write_all(out_fd, encode_frame({"op": "armed", "id": header.get("id"), "levels": levels}))
        go, blobs = read_frame_blocking(in_fd)
        if go.get("op") == "prefork":
            blank = prefork(lambda: drop_capabilities(libc))
            pageplan.populate(pageplan.SERVER)  # (once its forker is forked: see pageplan)
            go, blobs = read_frame_blocking(in_fd)
        if go.get("op") != "go":
            kernel.EXIT(0)  # the judge gave the sandbox up before using it
        # The files first: an early load handed over by on_go reads its /prog/main.py
        write_prog(go.get("files", []), blobs)
        on_go(go, blank)
        start_session(libc, go, armed_size)
        del blobs
    except BaseException as exc:
        _say("session set-up failed: %s: %s" % (type(exc).__name__, exc))
        kernel.EXIT(SETUP_FAILED)
    try:
        serve_session()
    finally:
        kernel.EXIT(0)


def _say(text):
    try:
        os.write(2, (text + "\n").encode())
    except OSError:
        pass


def serve(in_fd, out_fd, start_server, prefork=lambda drop: None):
    """The zygote's loop: ``session`` (its one blob: the prelude to keep compiled for the
    loads to come, :func:`.program.keep_prelude`) starts a session server in the new namespaces
    (``start_server(in_fd, out_fd)`` when armed: see :func:`_session_server`), then ``ended``
    carries its exit status; ``exit`` ends the zygote. ``prefork``: see :func:`_session_server`."""
    global DEVICE_REMOUNTS
    kernel.find_tid_offset()  # (once: then each session server is cloned, no helper)
    pageplan.load_libc()
    DEVICE_REMOUNTS = device_remounts()
    write_all(out_fd, encode_frame({"op": "hello", "zygote": True, "pid": os.getpid()}))
    while True:
        try:
            header, blobs = read_frame_blocking(in_fd)
        except EOFError:
            return
        op, rid = header.get("op"), header.get("id")
        if op == "session":
            if blobs:  # the prelude its load will likely bring (the last one's)
                keep_prelude(blobs[0].decode("utf-8", "surrogateescape"))
            del blobs
            status = _session(header, in_fd, out_fd, start_server, prefork)
            reply = {"op": "ended", "status": os.waitstatus_to_exitcode(status)}
        elif op == "plans":  # the judge's, learnt from its own program (pageplans.learn_pages)
            pageplan.take(blobs[0] if blobs else b"")
            reply = {"op": "plans", "pages": pageplan.sizes()}
        elif op == "exit":
            write_all(out_fd, encode_frame({"op": "bye", "id": rid}))
            return
        else:
            reply = {"op": "error", "error": "unknown zygote op %r" % (op,)}
        write_all(out_fd, encode_frame(dict(reply, id=rid)))
