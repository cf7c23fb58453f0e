"""The server's operations: one function per request op, over the :class:`~.state.ServerState`.

Exports: :data:`OPS` (op name -> function of ``(state, header, blobs)``, each sending exactly
one reply), :func:`fork_case` (where a case runs: the forker, or forked here), :func:`loaded`,
:func:`recover`, :func:`take_early_load`. See docs/sandbox.md ("Ops").
"""

import errno
import os

from . import inflight, tamper
from .cases import fork_here
from .forker import drop_blank_forker, drop_forker, make_forker
from .kernel import memfd, namespace_pids
from .loader import hand_to_blank, load_in_forker
from .program import compile_program, failed_load_stage, new_main, prelude_code
from .protocol import read_frame_blocking, write_all
from .forked_case import await_zombie
from .inplace_case import reap_ended
from .reaper import kill_all, reap_all, wipe_scratch
from .reply import reply, reply_with_fds
from .tamper import tampering


def op_put(state, header, blobs):
    """Write a file (kept across cases) into a scratch directory. Opened without blocking: a FIFO a
    program left at a kept path fails the put (a fresh sandbox is then taken) instead of holding it."""
    path = header["path"]
    mode = int(header.get("mode", 0o644))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, mode)
    try:
        write_all(fd, blobs[0])
    finally:
        os.close(fd)
    os.chmod(path, mode)
    state.kept_files.add(os.path.abspath(path))
    reply(state, {"op": "put", "ok": True})


def op_fetch(state, header, blobs):
    """Send back a regular file of at most ``max_bytes`` (else its size). Opened without blocking:
    a FIFO the program left there would hold the open until a writer came."""
    import stat

    path = header["path"]
    max_bytes = int(header.get("max_bytes", 64 << 20))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        reply(state, {"op": "fetch", "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)})
        return
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    refusal = None
    if not stat.S_ISREG(st.st_mode):
        refusal = {"error": "not a regular file"}
    elif st.st_size > max_bytes:
        refusal = {"size": st.st_size, "error": "file is %d bytes, more than %d" % (st.st_size, max_bytes)}
    if refusal is not None:
        os.close(fd)
        reply(state, dict({"op": "fetch", "ok": False}, **refusal))
        return
    reply_with_fds(state, {"op": "fetch", "ok": True, "mode": st.st_mode & 0o7777},
                   [(fd, st.st_size)])  # (it closes fd)


def op_stdin(state, header, blobs):
    """Write the next case's stdin now (a large input): the judge then measures the sandbox's
    memory with the input already in it, so the input is not charged to the program."""
    data = blobs[0] if blobs else b""
    blobs.clear()
    if state.staged_stdin is not None:
        os.close(state.staged_stdin)
        state.staged_stdin = None
    if header.get("mode") in ("python", "call") and state.forker is None and loaded(state):
        make_forker(state)  # (after a native run dropped it) before the judge measures
    state.staged_stdin = memfd("stdin", data)
    del data
    reply(state, {"op": "stdin", "ok": True})


def op_ps(state, header, blobs):
    """The processes in the sandbox other than this server and its forker (or the blank
    forker waiting for a program)."""
    fk = state.forker or state.blank_forker
    reply(state, {"op": "ps", "pids": namespace_pids(fk.pid if fk else None) if state.is_init else []})


def op_sync(state, header, blobs):
    """Answered once what the last reply left to do (``settling``) is done; a forker spent on
    a session's last case is made again only here, when another run follows after all."""
    if state.forker_spent:
        state.forker_spent = False
        if state.forker is None and not state.tampered and loaded(state):
            make_forker(state)
    freed, state.freed_in_flight = state.freed_in_flight, False
    reply(state, {"op": "sync", "freed_in_flight": freed})


def _load_request(header, blobs):
    """A ``load`` request's ``(source, prelude, filename, limits)``."""
    source = bytes(blobs[0])  # compiled like a file, so a coding line is honoured
    prelude = blobs[1].decode("utf-8", "surrogateescape") if len(blobs) > 1 else ""
    return source, prelude, header.get("filename", "main.py"), header.get("limits", {})


def take_early_load(state):
    """Right after ``go``, before the session's own start-up (its files, its capabilities): when
    the judge's next request is already here (it sends the load just behind the go), read it
    (``state.early_frame``, answered first after the hello) and, when it loads a Python program
    and the blank forker waits, hand the program over now (``state.early_load``): the forker
    compiles it while this server starts the session."""
    import select

    poller = select.poll()
    poller.register(state.in_fd, select.POLLIN)
    if not poller.poll(0):
        return
    try:
        header, blobs = read_frame_blocking(state.in_fd)
    except EOFError:
        return  # (the serving loop sees the end of the pipe too)
    state.early_frame = (header, blobs)
    if header.get("op") == "load" and state.blank_forker is not None and len(blobs) >= 1:
        handed = hand_to_blank(state, *_load_request(header, blobs))
        state.early_load = (header.get("id"), handed) if handed is not None else None


def op_load(state, header, blobs):
    """Compile the program once. A source that crashes or hangs the compiler is caught by
    compiling it first in a child under limits: the forker itself (:mod:`.loader`), or,
    when none can be forked, a throwaway child."""
    source, prelude, filename, limits = _load_request(header, blobs)
    blobs.clear()  # (freed before the reply: the next run's baseline must not hold them)
    early, state.early_load = state.early_load, None  # (handed to the blank forker already)
    handed = early[1] if early is not None and early[0] == header.get("id") else None
    if handed is None:
        drop_forker(state)  # it holds the previous program
        state.program.code = state.program.main_module = state.pending_load = None
    result = load_in_forker(state, source, prelude, filename, limits, handed)
    if result is None:
        result = _probe_compile(state, source, prelude, filename, limits)
    ok, wrapped, stage, error = result
    if not ok:
        reply(state, {"op": "load", "ok": False, "error": error, "stage": stage})
        return
    if state.forker is None:  # checked by the probe: this server's copy, then a forker
        _load_here(state, source, prelude, filename)
        reply(state, {"op": "load", "ok": True, "wrapped": state.program.wrapped, "settling": state.is_init})
        make_forker(state)  # while the judge reads the reply
        return
    reply(state, {"op": "load", "ok": True, "wrapped": wrapped})
    # This server's own copy (for cases forked here, a later forker) is made when first
    # needed (:func:`loaded`): usually never, the forker serving every case.
    state.pending_load = (source, prelude, filename)


def loaded(state):
    """True when a program is loaded in this server; compiles the one the forker loaded
    first (``state.pending_load``), now that it is needed. It compiled in the forker: a
    failure here is ours, never a verdict (later runs are refused: ``state.broken``)."""
    pending, state.pending_load = state.pending_load, None
    if pending is not None:
        try:
            _load_here(state, *pending)
        except BaseException as exc:
            state.program.code = state.program.main_module = None
            state.broken = state.broken or "the program did not load again: %s: %s" % (
                type(exc).__name__, exc)
            raise RuntimeError(state.broken)
    return state.program.code is not None


def _probe_compile(state, source, prelude, filename, limits):
    """The compile check in a throwaway child; ``(ok, None, stage, error)``."""
    probe = fork_here(state, {"mode": "compile_probe", "limits": limits, "filename": filename},
                      None, b"", None, (source, prelude))
    if probe.get("exit_code") != 0:
        stage = failed_load_stage(probe.get("exit_code"), probe.get("signal"))
        return False, False, stage, probe.get("stderr_text", "")
    return True, None, None, None


def _load_here(state, source, prelude, filename):
    """Compile the program and run the prelude in this server (checked in a child first)."""
    program = state.program
    program.code, program.wrapped = compile_program(source, filename)
    program.filename = filename
    # The prelude (task data: an import preamble, never the submission) runs once, here,
    # into the __main__ module every case forks with, instead of once per case. Same
    # semantics as running it first in each case: each case gets its own copy of that dict.
    program.main_module = new_main(filename, source)
    if prelude:
        exec(prelude_code(prelude), program.main_module.__dict__)
    import gc
    gc.collect()
    gc.freeze()


def fork_case(state, req, stdin=b"", call_args=None):
    """Run one case; returns the result header plus ``_fds`` (the blobs of the reply).

    A Python case of the loaded program goes to the forker (:meth:`.forker.Forker.run_case`);
    the rest (native programs, a Python case when there is no forker) is forked or spawned
    here (:func:`.cases.fork_here`), and cleaned up with ``kill(-1)``."""
    mode = req.get("mode", "exec")
    staged = state.staged_stdin if req.get("stdin_staged") else None
    state.staged_stdin = None
    drop_blank_forker(state)  # (a load took it, or the session said it runs no Python)
    if mode in ("python", "call") and (state.forker is not None or loaded(state)):
        if state.forker is None:
            make_forker(state)
        if state.forker is not None:
            case_stdin = staged if staged is not None else memfd("stdin", stdin)
            try:
                result = state.forker.run_case(state, req, case_stdin, call_args)
            finally:
                if case_stdin != staged:
                    os.close(case_stdin)
            if result is not None:
                if staged is not None:
                    os.close(staged)
                return result
    drop_forker(state)  # a direct fork's cleanup (kill(-1)) would take it anyway
    if mode in ("python", "call"):
        loaded(state)  # (the forker had it: this server's own copy is needed now)
    return fork_here(state, req, staged, stdin, call_args, None)


def op_run(state, header, blobs):
    """Run one case. A program may change this server's own rlimits, nice value, CPU affinity,
    scheduling policy or I/O priority (same uid): after the case that did it (found by
    comparing with the state at start-up), this and every later run is answered
    ``sandbox_tampered`` (the judge's runtime error), never run in a server that later
    cases would inherit it from, nor reported as the sandbox's own failure."""
    if state.tampered:
        reply(state, {"op": "run", "sandbox_tampered": state.tampered, "parts": []})
        return
    if state.broken:
        raise RuntimeError("the sandbox could not clean up after a failed run: " + state.broken)
    for path in header.get("keep", ()):  # outputs the judge will fetch (e.g. a binary)
        state.kept_files.add(os.path.abspath(path))
    stdin = blobs[0] if blobs else b""
    call_args = blobs[1] if len(blobs) > 1 else None
    blobs.clear()
    result = fork_case(state, header, stdin=stdin, call_args=call_args)
    tampered = tampering() or tamper.restore_autogroup()
    if tampered:
        state.tampered = result["sandbox_tampered"] = tampered
        drop_forker(state)
    fds = result.pop("_fds")
    python = header.get("mode") in ("python", "call")
    # a forker to make again after the reply: the judge must wait for it before it measures
    # the next run (its memory would be charged to that run): "settling"
    if (state.forker is None and not state.tampered and state.is_init and python
            and (state.program.code is not None or state.pending_load is not None)):
        result["settling"] = True
    # a case reported before its exit (its processes killed, not yet gone): they are reaped
    # and the scratch wiped after the reply; a next run waits for that ("reaping": sync)
    ended_early = state.reaping is not None
    left_in_flight = False
    try:
        try:
            # before the reply: the next request finds the sandbox clean (a wipe still going
            # on would count in its CPU and memory), and the judge waits for what this run left
            if not ended_early:
                wipe_scratch(state)
                left_in_flight = bool(inflight.foreign())  # (its pages freed after the reply)
            if ended_early or left_in_flight:
                result["reaping"] = True
        except BaseException:
            for item in fds:
                if not isinstance(item, bytes):
                    os.close(item[0])
            raise
        reply_with_fds(state, dict(result, op="run"), fds)  # (the stdout memfd closed before its last byte)
    finally:
        if reap_ended(state):  # (while the judge reads the reply)
            wipe_scratch(state)
        if ended_early or left_in_flight:
            free_in_flight(state)
        await_zombie(state)
        if (state.forker is None and not state.tampered and python and not state.forker_spent
                and loaded(state)):
            make_forker(state)  # while the judge reads the reply


def free_in_flight(state):
    """Once a case's processes are gone: the Unix sockets it left in flight freed
    (:mod:`.inflight`), said in the next ``sync`` or ``bye`` (the judge then waits for their
    memory to leave the cgroup, or gives the sandbox up); when the kernel does not free them,
    every later run is refused."""
    if not inflight.foreign():
        return
    state.freed_in_flight = True
    if not inflight.drain():
        state.tampered = "Unix sockets left in flight (not freed in %g s)" % inflight.DRAIN_SECONDS
        drop_forker(state)


def recover(state):
    """After a run failed in this server (an exception): nothing of it may reach the next
    run. Kill and reap every process (``kill(-1)``: no descriptor needed), drop the forker,
    forget a staged input, wipe the scratch directories. When a step fails, later runs are
    refused (``state.broken``)."""
    state.staged_stdin = state.reaping = None
    steps = (lambda: kill_all(state, 0), lambda: reap_all(state), lambda: drop_forker(state),
             lambda: drop_blank_forker(state), lambda: wipe_scratch(state))
    for step in steps:
        try:
            step()
        except Exception as exc:
            state.broken = state.broken or "%s: %s" % (type(exc).__name__, exc)
            state.forker = None


def run_failed(state, exc):
    """A ``run`` that raised before its reply: what a program did to this server (tampering,
    or an exhausted descriptor table) is the run's ``sandbox_tampered`` reply; True when
    replied so (else the caller reports the failure as ours)."""
    tampered = tampering()  # ... unless a program broke this server
    if not tampered and isinstance(exc, OSError) and exc.errno == errno.EMFILE:
        tampered = "open-file limit (out of descriptors mid-run)"  # set, reset
    recover(state)
    if not tampered:
        return False
    state.tampered = tampered
    reply(state, {"op": "run", "sandbox_tampered": tampered, "parts": []})
    return True


#: What answers each op (``exit`` is the server loop's own: it ends it).
OPS = {"run": op_run, "load": op_load, "put": op_put, "fetch": op_fetch, "ps": op_ps,
       "stdin": op_stdin, "sync": op_sync}
