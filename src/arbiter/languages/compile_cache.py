"""The on-disk compile cache: the same program is compiled once per machine, across runs.

Keyed by language, source bytes, file name, flags and toolchain fingerprint; atomic writes, a
torn entry is a miss; executables and the program's own compile errors are cached, limits never;
LRU-bounded; single-flight locks. The rules: ``docs/languages.md``.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import struct
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

GiB = 1024 ** 3
CACHE_ENV = "ARBITER_CACHE_DIR"
COMPILE_CACHE_BYTES_ENV = "ARBITER_COMPILE_CACHE_BYTES"
DEFAULT_MAX_BYTES = 2 * GiB
#: The largest executable stored, bytes (a static contest binary is ~2 MiB).
MAX_ENTRY_BYTES = 16 * 1024 ** 2
_MAGIC = b"ARBCC1\n"
_HEADER = struct.Struct(">Q")  # JSON meta length
_LOCK_STRIPES_HEX = 3  # 16**3 = 4096 lock files at most


def cache_root() -> Path:
    """arbiter's cache directory: ``$ARBITER_CACHE_DIR``, else ``~/.cache/arbiter``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "arbiter"


def env_bytes(name: str, default: int) -> int:
    """An integer byte count from environment variable ``name`` (``default`` when unset).
    Raises ValueError naming the variable when it is not a positive integer."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"${name} must be a byte count, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"${name} must be positive, got {value}")
    return value


@contextmanager
def file_lock(path: Path, timeout: float, *, poll: float = 0.02) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the ``with`` block.

    Works between processes and between threads of one process (each call opens its own file
    description). Yields ``True`` when the lock was taken, ``False`` when ``timeout`` seconds
    passed first or the lock file cannot be created (the caller then proceeds without it);
    ``timeout <= 0`` tries once.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:  # an unwritable cache directory: go on unlocked
        yield False
        return
    got = False
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                got = True
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
            if time.monotonic() >= deadline:
                break
            time.sleep(poll)
        yield got
    finally:
        if got:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def atomic_write(path: Path, chunks: list[bytes], mode: int = 0o644) -> None:
    """Write ``chunks`` to ``path`` via a temporary file in the same directory + ``rename``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def compile_key(source: bytes, source_name: str, flags: tuple[str, ...], toolchain_fingerprint: str, *,
                language: str = "cpp") -> str:
    """The cache key (64 hex chars) of one compile: sha256 of the language's registry name, the
    source bytes, the source file name (it reaches ``__FILE__`` and assert messages), the flags in
    order and the toolchain fingerprint."""
    h = hashlib.sha256()
    h.update(b"arbiter-compile-v2\0")
    h.update(json.dumps([language, source_name, list(flags), toolchain_fingerprint]).encode())
    h.update(b"\0")
    h.update(source)
    return h.hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    """A cached compile: ``ok`` (an executable exists), ``binary`` (bytes or ``None``),
    ``message`` (compiler output, already truncated), ``seconds`` (what the original compile took,
    wall seconds) and ``meta`` (the JSON header: flags, toolchain fingerprint, created time)."""

    ok: bool
    binary: bytes | None
    message: str
    seconds: float
    meta: dict


class CompileCache:
    """The compile cache under ``root`` (default ``cache_root()/compile``), bounded by
    ``max_bytes`` (default ``$ARBITER_COMPILE_CACHE_BYTES`` or 2 GiB), each executable by
    ``max_entry_bytes`` (larger ones are not stored). Thread- and process-safe; see the module
    docstring for the rules."""

    def __init__(self, root: str | Path | None = None, max_bytes: int | None = None,
                 max_entry_bytes: int = MAX_ENTRY_BYTES):
        self.root = Path(root) if root is not None else cache_root() / "compile"
        self.max_bytes = max_bytes if max_bytes is not None else env_bytes(COMPILE_CACHE_BYTES_ENV, DEFAULT_MAX_BYTES)
        self.max_entry_bytes = max_entry_bytes
        self._evict_lock = threading.Lock()

    def path(self, key: str) -> Path:
        """The entry file of ``key``."""
        return self.root / key[:2] / f"{key}.entry"

    @contextmanager
    def lock(self, key: str, timeout: float) -> Iterator[bool]:
        """Single-flight lock for ``key`` (see :func:`file_lock`); yields whether it was taken."""
        with file_lock(self.root / "locks" / f"{key[:_LOCK_STRIPES_HEX]}.lock", timeout) as got:
            yield got

    def get(self, key: str) -> CacheEntry | None:
        """The entry of ``key``, or ``None`` on a miss. A corrupt or torn entry is removed and
        reported as a miss. A hit refreshes the entry's mtime (LRU order)."""
        p = self.path(key)
        try:
            with open(p, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        except OSError:
            return None
        entry = self._decode(data, key)
        if entry is None:
            try:
                os.unlink(p)
            except OSError:
                pass
            return None
        try:
            os.utime(p)
        except OSError:
            pass
        return entry

    @staticmethod
    def _decode(data: bytes, key: str) -> CacheEntry | None:
        if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + _HEADER.size:
            return None
        (n,) = _HEADER.unpack_from(data, len(_MAGIC))
        start = len(_MAGIC) + _HEADER.size
        try:
            meta = json.loads(data[start:start + n])
        except ValueError:
            return None
        payload = data[start + n:]
        if (not isinstance(meta, dict) or meta.get("key") != key
                or meta.get("payload_len") != len(payload)
                or meta.get("payload_sha256") != hashlib.sha256(payload).hexdigest()):
            return None
        ok = bool(meta.get("ok"))
        return CacheEntry(ok=ok, binary=payload if ok else None, message=str(meta.get("message", "")),
                          seconds=float(meta.get("seconds", 0.0)), meta=meta)

    def put(self, key: str, *, ok: bool, binary: bytes | None, message: str, seconds: float,
            extra: dict | None = None) -> None:
        """Store a compile result atomically, then evict down to the size bound if needed.
        An unwritable cache is not an error (the compile result is still returned); an
        executable over ``max_entry_bytes`` is not stored."""
        payload = binary if (ok and binary is not None) else b""
        if len(payload) > self.max_entry_bytes:
            return
        meta = dict(extra or {})
        meta.update(key=key, ok=ok, message=message, seconds=seconds, created=time.time(),
                    payload_len=len(payload), payload_sha256=hashlib.sha256(payload).hexdigest())
        raw = json.dumps(meta).encode()
        try:
            atomic_write(self.path(key), [_MAGIC, _HEADER.pack(len(raw)), raw, payload])
        except OSError:
            return
        self.evict()

    def entries(self) -> list[tuple[Path, int, float]]:
        """``(path, size_bytes, mtime)`` of every entry."""
        out = []
        try:
            subdirs = [d for d in os.scandir(self.root) if d.is_dir() and len(d.name) == 2]
        except OSError:
            return out
        for d in subdirs:
            try:
                for e in os.scandir(d.path):
                    if e.name.endswith(".entry"):
                        try:
                            st = e.stat()
                        except OSError:
                            continue
                        out.append((Path(e.path), st.st_size, st.st_mtime))
            except OSError:
                continue
        return out

    def total_bytes(self) -> int:
        """Bytes held by entries now."""
        return sum(size for _, size, _ in self.entries())

    def evict(self) -> int:
        """Remove least recently used entries while the total exceeds ``max_bytes`` (down to 90 %
        of it). Returns the number of entries removed. Readers holding an entry open are not
        disturbed (the file is unlinked, its data stays readable)."""
        with self._evict_lock:
            entries = self.entries()
            total = sum(size for _, size, _ in entries)
            if total <= self.max_bytes:
                return 0
            target = int(self.max_bytes * 0.9)
            removed = 0
            for path, size, _ in sorted(entries, key=lambda e: e[2]):
                if total <= target:
                    break
                try:
                    os.unlink(path)
                except OSError:
                    continue
                total -= size
                removed += 1
            return removed

    def clear(self) -> None:
        """Remove every entry (locks stay)."""
        for path, _, _ in self.entries():
            try:
                os.unlink(path)
            except OSError:
                pass
