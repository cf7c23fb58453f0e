"""Running the loaded Python program in a forked case: stdio, ``__main__``, the call, the exit.

Exports: :func:`init`, :func:`fresh_stdio`, :func:`run_python`, :func:`prepare_python_process`,
:func:`run_prepared_python` (each over a :class:`~.state.LoadedProgram`). The case behaves like ``python3 -X utf8 main.py``; see docs/sandbox.md ("mode: python").
"""

import errno
import json
import os
from _io import _IOBase
import signal
import sys

from .call_harness import (CALL_MODULE_NAME, check_node_return, convert_args, find_function, plain_default,
                           returns_node)
from .program import load_checked, new_main
from .protocol import RESULT_FD


# Captured before any program runs: a program may monkeypatch os, json or builtins in its own
# process, and the harness code that runs after it must not be affected.
_DUMPS = json.dumps
_LOADS = json.loads
_WRITE = os.write
_LSEEK = os.lseek
_FTRUNCATE = os.ftruncate
_KILL = os.kill
_GETPID = os.getpid
_SIGNAL = signal.signal
_SIGMASK = signal.pthread_sigmask
_SIGXFSZ, _SIG_DFL, _SIG_UNBLOCK = signal.SIGXFSZ, signal.SIG_DFL, signal.SIG_UNBLOCK
_EFBIG = errno.EFBIG


ATEXIT = THREADING = None  # the real atexit and threading modules (set by init)
STDIO = None  # the stdio objects every case starts with (set by init)
#: The guest's own files: their frames are left out of a program's traceback.
GUEST_DIR = os.path.dirname(os.path.abspath(__file__))


def init():
    """At start-up: build the stdio objects, capture the real atexit and threading modules."""
    global STDIO, ATEXIT, THREADING
    STDIO = make_stdio()
    import atexit  # the real modules, whatever a program later puts in sys.modules (finalize)
    ATEXIT, THREADING = atexit, sys.modules["threading"]


def make_stdio():
    """Text stdio on fds 0-2 as ``python3 -X utf8`` makes them (CPython's ``create_stdio``): a
    ``TextIOWrapper`` with ``mode`` ``'r'`` / ``'w'`` over a ``BufferedReader`` /
    ``BufferedWriter`` over a ``FileIO`` (``closefd=False``) named ``'<stdin>'`` / ``'<stdout>'``
    / ``'<stderr>'``, so ``name`` and ``mode`` read the same at every level (templates such as
    PyRival's FastIO test ``file.mode``). Built once in the server (which never uses them), so
    each forked case gets clean objects for free."""
    import io

    def make(fd, name, mode, errors, line_buffering):
        raw = io.FileIO(fd, mode + "b", closefd=False)
        raw.name = name  # what CPython sets instead of the descriptor number
        buf = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
        text = io.TextIOWrapper(buf, encoding="utf-8", errors=errors, newline="\n",
                                line_buffering=line_buffering)
        text.mode = mode
        return text

    return (make(0, "<stdin>", "r", "surrogateescape", False),
            make(1, "<stdout>", "w", "surrogateescape", False),
            make(2, "<stderr>", "w", "backslashreplace", True))


def fresh_stdio():
    stdin, stdout, stderr = STDIO or make_stdio()
    sys.stdin = sys.__stdin__ = stdin
    sys.stdout = sys.__stdout__ = stdout
    sys.stderr = sys.__stderr__ = stderr


def run_python(program, req, call_args, probe):
    """A Python case forked by the server (``program``: its :class:`~.state.LoadedProgram`);
    ``probe``: ``(source, prelude)`` to compile here instead (the compile check)."""
    sys.set_int_max_str_digits(0) if hasattr(sys, "set_int_max_str_digits") else None
    # (the random module reseeds itself in a forked child: os.register_at_fork)
    fresh_stdio()
    if probe is not None:  # compile (and run the prelude) here first: the server must survive
        source, prelude = probe
        return load_checked(source, prelude, req.get("filename", "main.py"))[0]

    return run_prepared_python(program, req, call_args, prepare_python_process(program))


def prepare_python_process(program):
    """Make this process look like ``python3 main.py`` about to run the loaded program: a fresh
    ``__main__`` (the server's pristine one), ``sys.argv``, ``sys.path[0]``. Returns the module.
    The forker does it once; its children inherit it."""
    main = program.main_module or new_main(program.filename)
    sys.modules["__main__"] = main
    sys.argv = [program.filename]
    sys.path[0] = os.getcwd()
    return main


def run_prepared_python(program, req, call_args, main):
    """Run the loaded program (``mode: python``) or call its function (``mode: call``) in this
    process, prepared by :func:`prepare_python_process`. Returns the exit status."""
    g = main.__dict__
    status = 0
    dumps = _DUMPS
    if req.get("mode") == "call":
        payload = {"ok": False, "error": "the function did not return"}
        g["__name__"] = CALL_MODULE_NAME  # imported, not run (its __main__ block does not run)
        sys.modules[CALL_MODULE_NAME] = main
        try:
            exec(program.code, g)
            fn = find_function(g, req["fn_name"])
            spec = _LOADS(call_args.decode()) if call_args else {"args": [], "kwargs": {}}
            args, kwargs = convert_args(g, fn, spec)
            value = fn(*args, **kwargs)
            try:
                check_node_return(g, value, spec)
                if value is None and returns_node(g, fn, spec):
                    value = []  # LeetCode writes an empty list / tree as []
                payload = {"ok": True, "value": value}
                text = dumps(payload, allow_nan=True, default=plain_default(g, spec))
            except (TypeError, ValueError, RecursionError) as exc:
                payload = {"ok": True, "unserializable": "%s: %s" % (type(exc).__name__, exc),
                           "type": type(value).__name__}
                text = dumps(payload)
        except BaseException as exc:  # an exception inside the call is RE, whatever expected
            text = dumps({"ok": False, "error": "%s: %s" % (type(exc).__name__, str(exc)[:500])})
            _print_program_traceback(exc)
            status = 1
        data = text.encode("utf-8", "surrogateescape")
        del text
        # A return value larger than the output cap is OLE, as a too-long stdout is: the judge
        # would only get it cut (the result blob is capped too), and writing it may hit
        # RLIMIT_FSIZE (EFBIG, SIGXFSZ being ignored).
        cap = int(req.get("limits", {}).get("output_bytes", 64 << 20))
        over = status == 0 and len(data) > cap
        if not over:
            try:
                _write_result(data)
            except OSError as exc:
                if exc.errno != _EFBIG:
                    raise
                over = status == 0  # an exception's short message: still RE
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        if over:
            size = len(data)
            del data
            try:
                _write_result(dumps({"ok": False, "output_limit": True,
                                     "error": "output limit exceeded: the return value is %d bytes "
                                              "of JSON, more than %d" % (size, cap)}).encode())
            except OSError:
                pass
            _die_of_sigxfsz()  # the judge reads SIGXFSZ as OLE, as for a native program
        return status
    loaded = len(g)  # (the prelude's names: the program's are bound after them)
    try:
        exec(program.code, g)
    except SystemExit as exc:
        status = _exit_code_of(exc)
    except BaseException as exc:
        _print_program_traceback(exc)
        status = 1
    return _finalize(status, g, len(g) - loaded)


def _write_result(data):
    """Replace the call result (fd 3) with ``data``; raises OSError (EFBIG past RLIMIT_FSIZE)."""
    _LSEEK(RESULT_FD, 0, 0)
    _FTRUNCATE(RESULT_FD, 0)
    view = memoryview(data)
    while view:
        view = view[_WRITE(RESULT_FD, view):]


def _die_of_sigxfsz():
    """End this child by SIGXFSZ (file size limit exceeded), whatever the program did to the
    signal's disposition or mask (it runs in the main thread: the harness's own code)."""
    try:
        _SIGMASK(_SIG_UNBLOCK, [_SIGXFSZ])
        _SIGNAL(_SIGXFSZ, _SIG_DFL)
        _KILL(_GETPID(), _SIGXFSZ)
    except BaseException:
        pass


#: Frames of an uncaught exception's traceback that are printed: the last ones, as CPython's own
#: printer does (its default ``sys.tracebacklimit`` is 1000). Formatting every frame of a
#: recursion 10**6 deep (a program that raised ``sys.setrecursionlimit``) takes longer than the
#: time limit and would turn a quick runtime error into a time limit.
TRACEBACK_FRAMES = 1000


def _print_program_traceback(exc):
    """Print the traceback like ``python3 main.py`` would: the harness's own frames left out, only
    the last ``sys.tracebacklimit`` (at most :data:`TRACEBACK_FRAMES`) frames of each exception
    in the chain, so the exception type and the innermost frames are always there."""
    import traceback
    tb = exc.__traceback__
    while tb is not None and os.path.dirname(tb.tb_frame.f_code.co_filename) == GUEST_DIR:
        tb = tb.tb_next
    try:
        limit = getattr(sys, "tracebacklimit", TRACEBACK_FRAMES)
        limit = max(0, min(int(limit), TRACEBACK_FRAMES))
    except BaseException:
        limit = TRACEBACK_FRAMES
    try:
        # skip to the last `limit` entries first: walking tb_next is cheap, formatting is not
        depth, t = 0, tb
        while t is not None:
            depth += 1
            t = t.tb_next
        for _ in range(depth - limit):
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb, limit=-limit if limit else 0)
    except BaseException:
        pass


def _exit_code_of(exc):
    """The exit status of an uncaught ``SystemExit``, as CPython's ``_Py_HandleSystemExit``
    computes it: ``code`` None is 0; an ``int`` (by its real type, never ``isinstance``, which a
    ``__class__`` property fools) is its C ``long`` value (``int.__and__``: a subclass's own
    ``__and__`` is never called), -1 when it does not fit; anything else is printed, status 1."""
    try:
        code = exc.code
    except BaseException:
        code = exc
    if code is None:
        return 0
    if issubclass(type(code), int):
        if not -(1 << 63) <= int.__int__(code) < (1 << 63):
            return 255
        return int.__and__(code, 0xFF)
    try:
        sys.stderr.write(str(code) + "\n")
    except BaseException:
        pass
    return 1


def _finalize(status, g, bound):
    """What CPython's shutdown does after the program (``Py_FinalizeEx``): call
    ``threading._shutdown`` (of whatever ``sys.modules["threading"]`` holds, as CPython looks it
    up), run the exit functions of the real ``atexit`` module (captured at start-up: a program
    may put anything in ``sys.modules``), flush stdio, put ``sys.stdin/stdout/stderr`` back to
    the originals, release what the program's globals ``g`` (the last ``bound`` names) hold that
    has a finalizer (its module's teardown, :func:`_tear_down`: a file object only they hold, ``out = open(1, "w")``,
    is closed and so flushed, and a ``__del__`` runs, as ``python3 main.py`` does), put the
    streams back again, flush stdio again. An exception in any of them is
    ignored (CPython prints it as unraisable): it never changes the status, but a failed flush
    of stdio makes it 120."""
    threading = sys.modules.get("threading")
    try:
        # (the real module with no thread to join: nothing to do; its _shutdown joins exactly
        # the threads in _shutdown_locks: a program that clears _active still has them joined)
        if threading is not THREADING or THREADING._shutdown_locks:
            threading._shutdown()
    except BaseException:
        pass
    try:
        if ATEXIT._ncallbacks():
            ATEXIT._run_exitfuncs()
    except BaseException:
        pass
    status = _flush_stdio(status)
    try:  # (finalize_modules: sys's streams back to the originals, then the module torn down)
        _restore_stdio()
        _tear_down(g, bound)
        _restore_stdio()  # (a finalizer may have put its own in place)
    except BaseException:
        pass
    return _flush_stdio(status)


def _restore_stdio():
    sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__


def _tear_down(g, bound):
    """Release what the last ``bound`` names of the program's globals ``g`` (those the program
    bound: the prelude's come first) hold that has a finalizer (a file object, an instance whose
    class defines ``__del__``), newest first, each name set to ``None`` as ``_PyModule_ClearDict``
    does, everything else still bound (as CPython's final collection finds the module's dict
    whole). Nothing else is touched: every name and value read is a page the case copies from
    its forker, and a value without a finalizer would only cost the case its deallocation."""
    seen = {}
    names = reversed(g)
    for _ in range(max(0, bound)):
        name = next(names, None)
        if name is None:
            break
        kind = type(g[name])
        if kind not in seen:
            seen[kind] = issubclass(kind, _IOBase) or any("__del__" in vars(k) for k in kind.__mro__)
        if seen[kind]:
            g[name] = None  # (a value set, not a key added: the iteration goes on)


def _flush_stdio(status):
    """Flush stdout and stderr (CPython's ``flush_std_files``): ``status``, or 120 when it failed."""
    for stream in (sys.stdout, sys.__stdout__, sys.stderr, sys.__stderr__):
        if stream is None or _is_closed(stream):
            continue  # CPython's flush_std_files skips closed streams (print, then close)
        try:
            stream.flush()
        except BaseException:
            status = 120  # CPython's exit status when flushing stdio fails (Py_Exit)
    return status


def _is_closed(stream):
    """``stream.closed`` as CPython's ``file_is_closed`` reads it: an error reading it is False."""
    try:
        return bool(stream.closed)
    except BaseException:
        return False
