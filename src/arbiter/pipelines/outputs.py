"""Output folders and whole-file outputs shared by the pipelines (oracle verification, PIE reward
and eval, codegen scoring, goldilocks curation).

Row-by-row outputs go through :class:`arbiter.datasets.io.JsonlSink`; the files written whole
(``report.json``, ``config.json``, ``summary.json``) are replaced atomically
(:func:`arbiter.datasets.io.write_json_atomic`). :class:`arbiter.pipelines.runs.RunFolder` puts it together.

One writer per folder: :func:`ensure_out_dir` takes an exclusive ``flock`` on ``<folder>/.arbiter.lock``
(:func:`lock_out_dir`); a second run on the same folder, in another process or another thread, gets
:class:`OutputDirBusy`. The lock lasts until the outermost :func:`holds_out_dirs` call of the thread
returns (every pipeline entry point is wrapped in one), or until the process ends; the kernel drops it
when the process dies, however it dies. A run removes its lock file when it releases it (:func:`open_locked`,
:func:`unlock`). See ``docs/oracle-format.md`` ("One run per output folder").
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from arbiter.datasets.io.atomic import write_json_atomic  # noqa: F401  (re-exported: the one atomic writer)

#: the lock file inside every output folder while a run writes it (removed by :func:`unlock`)
LOCK_NAME = ".arbiter.lock"


class OutputDirError(ValueError):
    """The output folder cannot be used: it exists and is not a folder, or it cannot be created."""


class OutputDirBusy(OutputDirError):
    """Another run (another process, or another thread of this one) is writing the output folder."""


def ensure_out_dir(out_dir: str | os.PathLike) -> Path:
    """Create ``out_dir`` (and its parents), lock it for this run (:func:`lock_out_dir`) and return it.
    Raises :class:`OutputDirError` (a ``ValueError``, so the CLI reports it and exits 2) naming the path when
    it is an existing file or cannot be created, :class:`OutputDirBusy` when another run holds it."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"--out {out} exists and is not a folder; give a folder (it is created when missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputDirError(f"--out {out}: cannot create the output folder: {e.strerror or e}") from None
    lock_out_dir(out)
    return out


# --------------------------------------------------------------------------------------------------
# one run per output folder

_registry = threading.Lock()
_held: dict[str, tuple[int, int, str]] = {}  # realpath -> (lock fd, owning thread ident, lock file)
_scopes = threading.local()  # .stack: list of lists of realpaths locked in each holds_out_dirs level

F = TypeVar("F", bound=Callable[..., Any])


def _holder_of(path: Path) -> str:
    """`` (pid N: command)`` as the holder of the lock file wrote it, else ``""``."""
    try:
        text = path.read_bytes()[:512].decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return f" ({text})" if text else ""


def open_locked(path: str | os.PathLike) -> int:
    """A descriptor of the lock file ``path`` (created when missing) holding its exclusive ``flock``; raises
    ``BlockingIOError`` (another holder: the descriptor is closed) or ``OSError``. A lock file is removed by its
    holder on release (:func:`unlock`), so after taking the lock this checks that ``path`` is still the file
    locked (not one unlinked by the previous holder meanwhile) and tries again otherwise."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            mine = os.fstat(fd)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
            return fd
        os.close(fd)  # the holder before us removed it: lock the file now at ``path``


def unlock(path: str | os.PathLike, fd: int) -> None:
    """Remove the lock file ``path`` (when it is still the one ``fd`` locks), then drop the lock."""
    with contextlib.suppress(OSError):
        mine, now = os.fstat(fd), os.stat(path)
        if (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
            os.unlink(path)
    os.close(fd)


def remove_if_empty(path: str | os.PathLike) -> None:
    """Remove ``path`` when it is an empty file (an errors file of a run without errors)."""
    with contextlib.suppress(OSError):
        if os.stat(path).st_size == 0:
            os.unlink(path)


def lock_out_dir(folder: str | os.PathLike) -> None:
    """Take the exclusive lock of the existing folder ``folder`` for this run; a no-op when this thread
    already holds it. Never waits: raises :class:`OutputDirBusy` naming the folder (and the holder's pid
    and command, when it wrote them) when another process or thread holds it, :class:`OutputDirError`
    when the lock file cannot be opened."""
    out = Path(folder)
    key = os.path.realpath(out)
    me = threading.get_ident()
    with _registry:
        held = _held.get(key)
        if held is not None:
            if held[1] == me:
                return
            raise OutputDirBusy(f"--out {out} is in use by another run in this process; wait for it or use "
                                "another folder")
        try:
            fd = open_locked(out / LOCK_NAME)
        except BlockingIOError:
            raise OutputDirBusy(f"--out {out} is in use by another arbiter run{_holder_of(out / LOCK_NAME)}; wait "
                                "for it to finish or use another folder") from None
        except OSError as e:
            raise OutputDirError(f"--out {out}: cannot lock {LOCK_NAME}: {e.strerror or e}") from None
        with contextlib.suppress(OSError):  # who holds it, for the message of the next run
            note = f"pid {os.getpid()}: {' '.join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300]}\n"
            os.ftruncate(fd, 0)
            os.pwrite(fd, note.encode("utf-8", "replace"), 0)
        _held[key] = (fd, me, str(out / LOCK_NAME))
        stack = getattr(_scopes, "stack", None)
        if stack:
            stack[0].append(key)  # the outermost run of this thread owns it


def _release(key: str) -> None:
    with _registry:
        held = _held.pop(key, None)
    if held is not None:
        unlock(held[2], held[0])  # closing the only descriptor drops the flock


@contextlib.contextmanager
def out_dir_scope() -> Iterator[None]:
    """Folders locked inside this block (by this thread) are released when the outermost such block ends."""
    stack = getattr(_scopes, "stack", None)
    if stack is None:
        stack = _scopes.stack = []
    stack.append([])
    try:
        yield
    finally:
        mine = stack.pop()  # empty for an inner block: lock_out_dir records every folder in the outermost
        for key in mine:
            _release(key)


def holds_out_dirs(fn: F) -> F:
    """Decorator: run ``fn`` inside :func:`out_dir_scope` (the output folders it locks are released when
    it returns or raises, unless an enclosing run of this thread still holds them)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with out_dir_scope():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
