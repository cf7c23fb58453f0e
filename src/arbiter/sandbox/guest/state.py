"""Everything a session server keeps, declared in one place (nsjail's ``nsj_t``).

Exports: :class:`ServerState` (one per server; every guest module's functions take it),
:class:`LoadedProgram` (the Python program a process holds: the server's, or the forker's own),
:func:`new_state`. See docs/sandbox.md.
"""

import os
import stat

#: How the server opens a directory: never through a symbolic link.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LoadedProgram:
    """A compiled Python program, ready to run in a forked case (:mod:`.python_case`)."""

    __slots__ = ("code", "main_module", "filename", "wrapped", "heavy")

    def __init__(self):
        self.code = None  # the code object of the program (None: nothing loaded)
        self.main_module = None  # the ``__main__`` each case starts from (the prelude run in it)
        self.filename = "main.py"  # as ``sys.argv[0]`` and tracebacks show it
        self.wrapped = False  # compiled inside a function (a module-level ``return``)
        self.heavy = False  # library modules imported for it at load (:func:`.program.warm_heavy_imports`)


class ServerState:
    """The server's fields, one comment each; nothing else keeps state between requests. (A
    plain class with slots: ``dataclasses`` is not imported into the guest, whose every page a
    forked case may copy.)"""

    __slots__ = ("in_fd", "out_fd", "is_init", "scratch_fds", "program", "pending_load",
                 "kept_files", "forker", "blank_forker", "staged_stdin", "tampered", "broken",
                 "seq", "request_id", "replied", "zombie", "reaping", "own_children_fd", "early_frame",
                 "early_load", "forker_spent", "freed_in_flight", "in_place_ok")

    def __init__(self, in_fd, out_fd, is_init, request_id=None):
        self.in_fd = in_fd  # requests come in here
        self.out_fd = out_fd  # replies go out here
        self.is_init = is_init  # PID 1 of the sandbox (or a session): kill(-1) reaches all
        self.scratch_fds = {}  # scratch dir -> (its fd, its mode at start-up)
        self.program = LoadedProgram()  # this server's own copy of the program
        self.pending_load = None  # (source, prelude, filename) loaded in the forker, not here yet
        self.kept_files = set()  # files the wipe spares (put, a run's keep)
        self.forker = None  # the Forker that forks each Python case (:mod:`.forker`)
        self.blank_forker = None  # forked before the program was known (taken at load)
        self.staged_stdin = None  # a memfd: the next case's stdin, written beforehand
        self.tampered = ""  # what a program changed on this server: every later run refused
        self.broken = ""  # why runs are refused: a failed run could not be cleaned up after
        self.seq = 0  # runs sent to the forker (its report records carry it)
        self.request_id = request_id  # the id of the request being answered
        self.replied = False  # its one reply is sent
        self.zombie = None  # (pid, Forker): a reported case the forker reaps after the reply
        self.reaping = None  # the pid of a case reported before its exit (killed), reaped after the reply
        self.own_children_fd = None  # this server's /proc children file (reaper)
        self.early_frame = None  # (header, blobs): a request read before the hello, answered first
        self.early_load = None  # (its id, (forker, stderr)): that load, handed to the blank forker
        self.forker_spent = False  # the forker ran the session's last case itself: made again only on sync
        self.freed_in_flight = False  # a case left Unix sockets in flight, freed since the last sync (:mod:`.inflight`)
        self.in_place_ok = True  # the forker's own memory is small: it may run the last case itself (:mod:`.inplace_case`)


def new_state(in_fd, out_fd, scratch_dirs, hello_id=None):
    """A server's state at start-up: its pipes, its scratch directories opened (with their
    modes, which the wipe puts back)."""
    state = ServerState(in_fd, out_fd, os.getpid() == 1, hello_id)
    for d in scratch_dirs:
        try:
            fd = os.open(d, DIR_FLAGS)
        except OSError:
            continue
        state.scratch_fds[d] = (fd, stat.S_IMODE(os.fstat(fd).st_mode))
    return state
