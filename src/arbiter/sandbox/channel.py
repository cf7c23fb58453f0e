"""The host's side of the guest protocol: one request, one reply, over the server's two pipes
(and bwrap's info and stderr pipes while it starts).

A mixin of :class:`~arbiter.sandbox.sandbox.Sandbox`; frames are described in docs/sandbox.md.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from typing import Any, Callable, Sequence

from arbiter.sandbox import cgroups
from arbiter.sandbox.errors import SandboxError
from arbiter.sandbox.guest.protocol import LEN, MAX_HEADER, encode_frame

#: Seconds between two looks at the sandbox's CPU use while a run is going on.
WATCH_INTERVAL = 0.1


class ChannelMixin:
    """Requests to the guest server (``_to_server``, ``_from_server``, ``_request_id``,
    ``_broken``, ``_proc``, ``_cg`` are the sandbox's)."""

    def _send(self, header: dict[str, Any], blobs: Sequence[bytes] = ()) -> None:
        if self._to_server < 0:
            raise SandboxError(self._broken or "the sandbox is closed")
        data = memoryview(encode_frame(header, blobs))
        try:
            while data:
                n = os.write(self._to_server, data)
                data = data[n:]
        except BrokenPipeError as exc:
            self._broken = "the sandbox server is gone"
            raise SandboxError(self._broken) from exc

    def _read_exact(self, n: int, deadline: float, watch: Callable[[], bool] | None = None) -> bytes:
        """``n`` bytes from the server. ``watch`` (optional) is called every
        :data:`WATCH_INTERVAL` seconds while nothing arrives, until it returns True. Reads what
        is there (a whole small reply at once) into a buffer the next frames are taken from."""
        buf = self._inbox
        fd = self._from_server
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

    @property
    def _inbox(self) -> bytearray:
        """What was read from the server and not taken yet (see :meth:`_read_exact`)."""
        try:
            return self.__dict__["_inbox_bytes"]
        except KeyError:
            return self.__dict__.setdefault("_inbox_bytes", bytearray())

    def _read_frame(self, deadline: float, watch: Callable[[], bool] | None = None
                    ) -> tuple[dict[str, Any], list[bytes]]:
        (n,) = LEN.unpack(self._read_exact(4, deadline, watch))
        if n > MAX_HEADER:
            raise SandboxError("oversized frame from the sandbox server")
        header = json.loads(self._read_exact(n, deadline))
        sizes = header.get("blobs", [])
        if not isinstance(sizes, list) or len(sizes) > 8:
            raise SandboxError("malformed frame from the sandbox server")
        blobs = [self._read_exact(int(s), deadline) for s in sizes]
        return header, blobs

    def _request(self, header: dict[str, Any], blobs: Sequence[bytes], timeout: float,
                 watch: Callable[[], bool] | None = None) -> tuple[dict[str, Any], list[bytes]]:
        """Send one request and read its reply, which must carry the request's ``id`` (a reply
        to another request means the two sides are out of step: the sandbox is given up)."""
        self._request_id += 1
        self._send(dict(header, id=self._request_id), blobs)
        try:
            reply, rblobs = self._read_frame(time.monotonic() + timeout, watch)
            if reply.get("id") != self._request_id:
                raise ValueError(f"reply {reply.get('id')!r} to request {self._request_id}")
        except (EOFError, TimeoutError, ValueError) as exc:
            self._broken = f"the sandbox server failed: {exc}"
            self._kill_now()
            raise SandboxError(self._broken) from exc
        if reply.get("op") == "error":
            raise SandboxError(f"sandbox server error: {reply.get('error')}")
        return reply, rblobs

    def _kill_now(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        if self._cg is not None:
            try:
                self._cg.kill_all()
            except cgroups.CgroupError:
                pass

    def _read_info(self, fd: int, deadline: float) -> dict[str, Any]:
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

    def _stderr_tail(self) -> str:
        if self._proc is None or self._proc.stderr is None:
            return ""
        try:
            os.set_blocking(self._proc.stderr.fileno(), False)
            data = self._proc.stderr.read(4096) or b""
        except (OSError, ValueError):
            data = b""
        text = data.decode("utf-8", "replace").strip()
        try:
            code = self._proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            code = None
        status = f"; bwrap exit status {code}" if code is not None else ""
        return f"{status} (stderr: {text})" if text else status
