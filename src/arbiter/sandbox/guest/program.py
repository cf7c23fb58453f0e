"""Loading the Python program: compile it like ``python3 main.py``, its ``__main__``, heavy imports.

Exports: :func:`compile_program`, :func:`load_checked`, :func:`new_main`,
:func:`warm_heavy_imports`, :func:`prelude_code`, :func:`keep_prelude`, :func:`warm_up_prelude`,
:data:`PRELUDE_FAILED`, :func:`failed_load_stage`.
See docs/sandbox.md ("load", "The zygote").
"""

import builtins
import os
import sys


#: Modules too heavy to import for every sandbox (numpy: ~50 ms, ~20 MB; dataclasses and
#: inspect: 2 MB more for every fork to copy) that are imported once, before any case forks,
#: when the loaded program mentions them: name -> module (``np`` too: preludes may bind it
#: lazily).
HEAVY_MODULES = {"numpy": "numpy", "np": "numpy", "dataclasses": "dataclasses",
                 "dataclass": "dataclasses", "inspect": "inspect"}
#: Names the program or its prelude may define whose cases need a module in the call harness
#: (it reads ``ListNode`` / ``TreeNode`` annotations with ``inspect``).
HARNESS_MODULES = {"ListNode": "inspect", "TreeNode": "inspect"}


#: ``(text, code, imports)``: the prelude the zygote compiled ahead (:func:`keep_prelude`) and its
#: imports of loaded modules (:func:`_loaded_imports`), or None.
_PRELUDE = None
#: A longer prelude is compiled at each load, never kept.
KEPT_PRELUDE_CHARS = 1 << 16


def keep_prelude(text):
    """In the zygote (which runs no untrusted code), ahead of a session: compile the prelude the
    judge expects the next load to bring (task data, never a submission), so every session
    forked after it gets the code object copy-on-write instead of compiling it on the
    submission's path. One kept at a time; a prelude that does not compile is not kept."""
    global _PRELUDE
    if not text or len(text) > KEPT_PRELUDE_CHARS or (_PRELUDE is not None and _PRELUDE[0] == text):
        return
    try:
        _PRELUDE = (text, compile(text, "<prelude>", "exec"), _loaded_imports(text))
    except BaseException:
        _PRELUDE = None


def _loaded_imports(text):
    """The prelude's top-level ``import`` statements that import nothing here (every module, and
    every name taken from one, loaded already), compiled; None when there is none."""
    import ast

    body = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.Import):
            loaded = all(alias.name in sys.modules for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in sys.modules:
            names = vars(sys.modules[node.module])  # (not getattr: no module __getattr__ runs)
            loaded = all(alias.name != "*" and alias.name in names for alias in node.names)
        else:
            loaded = False
        if loaded:
            body.append(node)
    return compile(ast.Module(body, []), "<warm-up>", "exec") if body else None


def warm_up_prelude():
    """In the blank forker, before its program is known: run the kept prelude's imports of loaded
    modules (nothing else of it) into a namespace it then drops, so the pages the prelude's own
    run at load will write (the names looked up, their reference counts) are copied now."""
    kept = _PRELUDE
    if kept is not None and kept[2] is not None:
        exec(kept[2], {"__name__": "<warm-up>"})


def prelude_code(text):
    """``text`` compiled as a prelude (``compile(text, "<prelude>", "exec")``): the kept code
    object when it is the kept text, else compiled now (errors raised as compile raises them)."""
    kept = _PRELUDE
    if kept is not None and kept[0] == text:
        return kept[1]
    return compile(text, "<prelude>", "exec")


def _imported_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _imported_names(const)
    return names


def warm_heavy_imports(code, main=None):
    """Import the heavy modules the program's code mentions (:data:`HEAVY_MODULES`), and those
    the call harness needs for names the code or its prelude (in ``main``, its ``__main__``)
    defines (:data:`HARNESS_MODULES`), in the forker: every case then forks with them loaded.
    Only installed library modules, never the program's own code. Returns how many it imported."""
    import importlib
    names = _imported_names(code)
    wanted = [mod for name, mod in HEAVY_MODULES.items() if name in names]
    defined = names | (set(vars(main)) if main is not None else set())
    wanted += [mod for name, mod in HARNESS_MODULES.items() if name in defined]
    imported = 0
    for mod in wanted:
        if mod not in sys.modules:
            try:
                importlib.import_module(mod)
                imported += 1
            except Exception:
                pass
    return imported


def compile_program(source, filename):
    """Compile ``source`` (bytes, decoded as ``python3 main.py`` would: PEP 263 coding line, BOM,
    else UTF-8) as a module. A module-level ``return`` (legal in the APPS/TACO harness, which
    wraps stdin programs in a function) is accepted by wrapping the body the same way, only when
    plain compilation fails for that reason. Returns ``(code, wrapped)``."""
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
        _remember_source(source, filename)
        return code, False
    except SyntaxError as exc:
        if "'return' outside function" not in str(exc.msg):
            raise
    source = _decode_source(source)
    body = "".join("    " + line if line.strip() else line for line in source.splitlines(True))
    wrapped = "def __arbiter_main__():\n" + body + "\n__arbiter_main__()\n"
    code = compile(wrapped, filename, "exec", dont_inherit=True)
    _remember_source(wrapped, filename)
    return code, True


def _decode_source(source):
    """``source`` as text, decoded as ``python3 main.py`` would (PEP 263 coding line, BOM, UTF-8)."""
    if isinstance(source, bytes):
        import io
        import tokenize
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        source = source.decode(encoding)
    return source


def _remember_source(source, filename):
    """Put the program's text in :mod:`linecache` (compiled from memory, it has no file the
    traceback printer could read), so tracebacks show source lines as ``python3 main.py`` does.
    Best effort: never fails the compile."""
    try:
        import linecache
        text = _decode_source(source)
        if len(text) <= (4 << 20):
            linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    except Exception:
        pass


#: Exit statuses of a checked load that failed (:func:`load_checked`): the program does not
#: compile, compiling it raised something else (a MemoryError, a RecursionError), the prelude raised.
#: (Not 1: the status of an exception nothing caught, in arbiter's own code.)
SYNTAX, COMPILE_FAILED, PRELUDE_FAILED = 101, 102, 103


#: Signals a compile can end with by the source's doing: it crashed the compiler (a stack
#: overflow, an abort), or ran out of memory (the cgroup's OOM kill) or time (killed then).
COMPILER_SIGNALS = (4, 6, 7, 8, 9, 11, 24, 25)  # ILL ABRT BUS FPE KILL SEGV XCPU XFSZ


def failed_load_stage(exit_code, signal):
    """Whose failure a load that ended without loading is (``signal``: the one it died of, or
    None): ``"program"`` (the compiler's statuses, :data:`COMPILER_SIGNALS`), ``"prelude"`` (the
    task's), or ``"sandbox"`` (any other end: arbiter's own, never a CE)."""
    if signal in COMPILER_SIGNALS or (signal is None and exit_code in (SYNTAX, COMPILE_FAILED)):
        return "program"
    return "prelude" if signal is None and exit_code == PRELUDE_FAILED else "sandbox"


def load_checked(source, prelude, filename):
    """Compile ``source`` and run ``prelude`` into a fresh ``__main__``, in a child that may die of
    it: ``(0, code, wrapped, main)``, or ``(status, None, False, None)`` with the compiler's or the
    prelude's traceback on stderr (:data:`SYNTAX`, :data:`COMPILE_FAILED`, :data:`PRELUDE_FAILED`)."""
    import traceback
    try:
        code, wrapped = compile_program(source, filename)
    except SyntaxError:
        return _failed(traceback, SYNTAX, 0)
    except BaseException:
        return _failed(traceback, COMPILE_FAILED, 0)
    main = new_main(filename, source)
    if prelude:
        try:
            exec(prelude_code(prelude), main.__dict__)
        except BaseException:
            return _failed(traceback, PRELUDE_FAILED, 3)
    return 0, code, wrapped, main


def _failed(traceback, status, limit):
    """Print the exception being handled (``limit`` frames) on stderr; a failed load's tuple."""
    traceback.print_exc(limit=limit)
    sys.stderr.flush()
    return status, None, False, None


def new_main(filename, source=None):
    """A fresh ``__main__`` for the program ``source`` (its :func:`script_path` as ``__file__``)."""
    import types
    main = types.ModuleType("__main__")
    main.__file__ = script_path(filename, source)
    main.__builtins__ = builtins  # (what a script's __main__ has: the module)
    return main


#: Where a session's files are (read-only once it has started).
PROG_DIR = "/prog"


def script_path(filename, source):
    """The program's ``__file__``: ``/prog/<filename>`` when the session's files hold it (exactly
    ``source``, the bytes compiled, so ``multiprocessing``'s spawn and forkserver children, which
    run that file, and ``open(__file__)`` get this program), else ``<cwd>/<filename>`` (a path
    with no file)."""
    path = os.path.join(PROG_DIR, filename)
    if source is not None and "/" not in filename:
        try:
            with open(path, "rb") as f:
                if f.read(len(source) + 1) == source:
                    return path
        except OSError:
            pass
    return os.path.join(os.getcwd(), filename)
