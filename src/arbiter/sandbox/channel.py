"""The host's side of the guest protocol: one request, one reply, over the server's two pipes.

:class:`Channel` owns the pipes, the bytes read and not yet taken, the request ids and why the
sandbox is given up (``broken``); it knows nothing of sessions (a hook, ``before_read``, lets
:class:`~arbiter.sandbox.session.Session` take the hello a ``go`` left first). Frames are
described in docs/sandbox.md.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any, Callable, Sequence

from arbiter.sandbox.errors import SandboxError
from arbiter.sandbox.guest.protocol import LEN, MAX_HEADER, encode_frame

#: Seconds between two looks at the sandbox's CPU use while a run is going on.
WATCH_INTERVAL = 0.1


class Channel:
    """Requests to the guest server over ``to_server`` / ``from_server``. ``kill()`` stops the
    sandbox at once (called when the server failed or answered out of step)."""

    def __init__(self, to_server: int, from_server: int, kill: Callable[[], None]):
        self.to_server, self.from_server = to_server, from_server
        self.kill = kill
        self.request_id = 0  # the id of the last request sent
        self.broken = ""  # why the sandbox can serve no more requests ("": it can)
        self.before_read: Callable[[], None] | None = None  # run before each frame is read
        self._inbox = bytearray()  # read from the server, not taken yet (see read_exact)
        self._held = b""  # a frame to write with the next one (see hold)

    def fail(self, reason: str) -> SandboxError:
        """Give the sandbox up (``broken``, killed); the error to raise."""
        self.kill()
        return self.refuse(reason)

    def refuse(self, reason: str) -> SandboxError:
        """No more requests (``broken``: the first reason stays); the error to raise."""
        self.broken = self.broken or reason
        return SandboxError(self.broken)

    def on_read(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` before each frame is read (a session's pending hello)."""
        self.before_read = hook

    def next_id(self) -> int:
        """A new request id (for a request whose reply is read later)."""
        self.request_id += 1
        return self.request_id

    def hold(self, header: dict[str, Any], blobs: Sequence[bytes] = ()) -> None:
        """Send this frame with the next one, in one write (or before the next read): a
        session's ``go`` and its ``load``, which the server then finds together."""
        if self.to_server < 0:
            raise SandboxError(self.broken or "the sandbox is closed")
        self._held += encode_frame(header, blobs)

    def flush(self) -> None:
        """Send a held frame now (before a read: the reply may depend on it)."""
        if self._held:
            self._write(b"")

    def send(self, header: dict[str, Any], blobs: Sequence[bytes] = ()) -> None:
        if self.to_server < 0:
            raise SandboxError(self.broken or "the sandbox is closed")
        self._write(encode_frame(header, blobs))

    def _write(self, frame: bytes) -> None:
        data, self._held = memoryview(self._held + frame if self._held else frame), b""
        try:
            while data:
                n = os.write(self.to_server, data)
                data = data[n:]
        except BrokenPipeError as exc:
            self.broken = self.broken or "the sandbox server is gone"
            raise SandboxError(self.broken) from exc

    def read_exact(self, n: int, deadline: float, watch: Callable[[], bool] | None = None) -> bytes:
        """``n`` bytes from the server. ``watch`` (optional) is called every
        :data:`WATCH_INTERVAL` seconds while nothing arrives, until it returns True. Reads what
        is there (a whole small reply at once) into a buffer the next frames are taken from."""
        buf = self._inbox
        fd = self.from_server
        while len(buf) < n:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                raise TimeoutError("the sandbox server did not answer in time")
            r, _, _ = select.select([fd], [], [], min(timeout, WATCH_INTERVAL) if watch else timeout)
            if not r:
                if watch is not None and watch():
                    watch = None
                continue
            chunk = os.read(fd, min(max(n - len(buf), 1 << 16), 1 << 20))
            if not chunk:
                raise EOFError("the sandbox server closed its pipe")
            buf += chunk
        if len(buf) == n:  # (a large blob: one copy, not two)
            data = bytes(buf)
            buf.clear()
            return data
        with memoryview(buf) as view:
            data = bytes(view[:n])
        del buf[:n]
        return data

    def read_frame(self, deadline: float, watch: Callable[[], bool] | None = None
                   ) -> tuple[dict[str, Any], list[bytes]]:
        """The next frame (after :attr:`before_read`): its header and blobs."""
        if self.before_read is not None:
            self.before_read()
        return self.read_raw_frame(deadline, watch)

    def read_raw_frame(self, deadline: float, watch: Callable[[], bool] | None = None
                       ) -> tuple[dict[str, Any], list[bytes]]:
        self.flush()
        (n,) = LEN.unpack(self.read_exact(4, deadline, watch))
        if n > MAX_HEADER:
            raise SandboxError("oversized frame from the sandbox server")
        header = json.loads(self.read_exact(n, deadline))
        sizes = header.get("blobs", [])
        if not isinstance(sizes, list) or len(sizes) > 8:
            raise SandboxError("malformed frame from the sandbox server")
        blobs = [self.read_exact(int(s), deadline) for s in sizes]
        return header, blobs

    def request(self, header: dict[str, Any], blobs: Sequence[bytes], timeout: float,
                watch: Callable[[], bool] | None = None) -> tuple[dict[str, Any], list[bytes]]:
        """Send one request and read its reply, which must carry the request's ``id`` (a reply
        to another request means the two sides are out of step: the sandbox is given up)."""
        rid = self.next_id()
        self.send(dict(header, id=rid), blobs)
        try:
            reply, rblobs = self.read_frame(time.monotonic() + timeout, watch)
            if reply.get("id") != rid:
                raise ValueError(f"reply {reply.get('id')!r} to request {rid}")
        except (EOFError, TimeoutError, ValueError) as exc:
            raise self.fail(f"the sandbox server failed: {exc}") from exc
        if reply.get("op") == "error":
            raise SandboxError(f"sandbox server error: {reply.get('error')}")
        return reply, rblobs

    def close(self) -> None:
        """Close both pipes (in a forked child of the judge: its own copies)."""
        for fd in (self.to_server, self.from_server):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.to_server = self.from_server = -1
        self._held = b""


def read_info(fd: int, deadline: float) -> dict[str, Any]:
    """bwrap's ``--info-fd`` JSON (the sandbox's first process's pid) from ``fd``."""
    buf = b""
    while True:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            raise SandboxError("timed out waiting for bwrap's info")
        r, _, _ = select.select([fd], [], [], timeout)
        if not r:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
        try:
            return json.loads(buf)
        except ValueError:
            continue
    if not buf:
        raise SandboxError("bwrap exited before starting the sandbox")
    return json.loads(buf)
