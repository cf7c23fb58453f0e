"""Where reusable verdicts are kept: a bounded in-memory store (optionally backed by a folder),
and the submissions being judged right now, so a copy waits for its original instead of running.

A verdict is kept as compressed JSON (:mod:`arbiter.judge.codec`) and comes back as a new
:class:`~arbiter.judge.verdict.Verdict` with ``cached=True``. ``SANDBOX_ERROR`` is never kept.
A folder entry carries its own checksum; a torn or altered one is a miss. See ``docs/step.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import zlib
from collections import OrderedDict
from concurrent.futures import Future
from pathlib import Path

from arbiter.judge.codec import verdict_from_json, verdict_to_json
from arbiter.judge.verdict import Outcome, Verdict
from arbiter.languages.base import build_stopped_by_host
from arbiter.languages.compile_cache import atomic_write

#: Bytes of compressed verdicts kept in memory by default (a verdict of 100 cases is ~1-3 KB).
DEFAULT_MEMORY_BYTES = 64 * 1024 * 1024
_MAGIC = b"arbiter-verdict-2\n"


def reusable(verdict: Verdict) -> bool:
    """Whether ``verdict`` may answer a later identical submission: anything the program did,
    never our own failure (``SANDBOX_ERROR``, which includes a case still starved of CPU after its
    reruns) nor a ``CE`` from a build a limit or the machine stopped (docs/step.md, "What is never
    reused")."""
    if verdict.outcome is Outcome.SANDBOX_ERROR:
        return False
    if verdict.outcome is Outcome.CE and build_stopped_by_host(verdict.reason, verdict.compile_output):
        return False
    return not any(c.outcome is Outcome.SANDBOX_ERROR for c in verdict.cases)


#: zlib's window for a stored verdict: 4 KiB (a verdict's JSON repeats within a case's few
#: hundred bytes). The default 32 KiB costs a quarter of its time setting up for a small one;
#: :func:`decode` reads either.
_WBITS = 12


def encode(verdict: Verdict) -> bytes:
    d = verdict_to_json(verdict)
    d["cached"] = False
    z = zlib.compressobj(1, zlib.DEFLATED, _WBITS)
    return z.compress(json.dumps(d, separators=(",", ":")).encode("utf-8")) + z.flush()


def decode(blob: bytes) -> Verdict:
    """The stored verdict as a new object, marked ``cached``."""
    d = json.loads(zlib.decompress(blob))
    d["cached"] = True
    return verdict_from_json(d)


def _checksum(key: str, payload: bytes) -> bytes:
    """sha256 (hex) of the key and the payload: an entry read under another key's name is a miss."""
    return hashlib.sha256(key.encode("ascii", "replace") + b"\n" + payload).hexdigest().encode()


class DiskStore:
    """One file per key under ``folder`` (``<key[:2]>/<key>``): a header, the sha256 of the key
    and the payload, the payload. Written atomically; safe between processes (the last writer
    wins, and every writer writes the same verdict's bytes or another valid verdict of the same
    key)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def get(self, key: str) -> bytes | None:
        try:
            raw = self._path(key).read_bytes()
        except OSError:
            return None
        head = len(_MAGIC)
        if not raw.startswith(_MAGIC) or len(raw) < head + 65:
            return None
        digest, payload = raw[head:head + 64], raw[head + 65:]
        if _checksum(key, payload) != digest:
            return None
        return payload

    def put(self, key: str, payload: bytes) -> None:
        digest = _checksum(key, payload)
        try:
            atomic_write(self._path(key), [_MAGIC, digest, b"\n", payload])
        except OSError:  # a full or read-only disk costs reuse, never a verdict
            pass


class VerdictStore:
    """Verdicts by key (:func:`arbiter.judge.step.key.verdict_key`), least recently used dropped
    past ``max_bytes``; ``disk``: a :class:`DiskStore` read on a memory miss and written on put.
    Thread-safe. Also the table of keys being judged now (:meth:`claim`, :meth:`settle`)."""

    def __init__(self, max_bytes: int = DEFAULT_MEMORY_BYTES, disk: DiskStore | None = None):
        self.max_bytes = max_bytes
        self.disk = disk
        self._lock = threading.Lock()
        self._memory: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._running: dict[str, Future] = {}

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            blob = self._memory.get(key)
            if blob is not None:
                self._memory.move_to_end(key)
        if blob is None and self.disk is not None:
            blob = self.disk.get(key)
            if blob is not None:
                self._remember(key, blob)
        if blob is None:
            return None
        try:
            return decode(blob)
        except (ValueError, KeyError, TypeError, zlib.error):  # unreadable: judge again
            return None

    def put(self, key: str, verdict: Verdict) -> bool:
        """Keep ``verdict`` when it is :func:`reusable`; whether it was kept."""
        if not reusable(verdict):
            return False
        blob = encode(verdict)
        self._remember(key, blob)
        if self.disk is not None:
            self.disk.put(key, blob)
        return True

    def _remember(self, key: str, blob: bytes) -> None:
        with self._lock:
            old = self._memory.pop(key, None)
            self._bytes -= len(old) if old is not None else 0
            self._memory[key] = blob
            self._bytes += len(blob)
            while self._bytes > self.max_bytes and self._memory:
                _, dropped = self._memory.popitem(last=False)
                self._bytes -= len(dropped)

    def claim(self, key: str) -> Future | None:
        """``None`` when the caller now owns ``key`` (it must :meth:`settle` it), else the
        future of the submission of ``key`` being judged (its verdict, or its exception)."""
        with self._lock:
            running = self._running.get(key)
            if running is None:
                self._running[key] = Future()
            return running

    def settle(self, key: str, verdict: Verdict | None = None, error: BaseException | None = None) -> None:
        """The owner's run of ``key`` ended: keep the verdict (if reusable), wake the waiters."""
        if verdict is not None:
            self.put(key, verdict)
        with self._lock:
            fut = self._running.pop(key, None)
        if fut is not None:
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(verdict)

    def __len__(self) -> int:
        with self._lock:
            return len(self._memory)


__all__ = ["DEFAULT_MEMORY_BYTES", "DiskStore", "VerdictStore", "decode", "encode", "reusable"]
