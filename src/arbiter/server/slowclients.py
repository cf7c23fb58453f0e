"""Slow or silent clients: a connection must send its request's headers within
:data:`HEADER_SECONDS` (of its start, or of its last answer) and its body within
:func:`body_seconds`; one client address holds at most :data:`CONNECTIONS_PER_ADDRESS`
connections; a connection whose client leaves the answer unread (its write buffer full and not
draining) for :data:`SEND_SECONDS` is aborted. Otherwise connections that send nothing, or a byte
now and then, would hold the server's descriptors (no token needed to open one), a stalled upload
its share of the body budget and an unread answer its memory, file and connection, for ever. See
``docs/serve.md``, "Under load and faults".
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from typing import Any

#: Seconds a connection has to send a request's headers: from its start, or from its last answer
#: (``ARBITER_HEADER_SECONDS``).
HEADER_SECONDS = float(os.environ.get("ARBITER_HEADER_SECONDS", "30"))
#: Live connections one client address may hold; more are closed at once (``ARBITER_CONNECTIONS_PER_ADDRESS``).
CONNECTIONS_PER_ADDRESS = int(os.environ.get("ARBITER_CONNECTIONS_PER_ADDRESS", "1024"))
#: Seconds a connection's write buffer may stay full (its client reads nothing) before it is aborted
#: (``ARBITER_SEND_SECONDS``).
SEND_SECONDS = float(os.environ.get("ARBITER_SEND_SECONDS", "60"))
#: A body gets this many seconds (``ARBITER_BODY_SECONDS``), plus one per :data:`BODY_BYTES_PER_SECOND` of its size.
BODY_SECONDS = float(os.environ.get("ARBITER_BODY_SECONDS", "30"))
BODY_BYTES_PER_SECOND = 1 << 20


def body_seconds(size: int) -> float:
    """The seconds a body of ``size`` bytes (declared, or the largest allowed) has to arrive."""
    return BODY_SECONDS + size / BODY_BYTES_PER_SECOND


def guarded(base: type) -> type:
    """uvicorn's HTTP protocol class ``base`` with the header deadline, the per-address cap and the
    write-stall deadline (both of uvicorn's implementations keep ``loop``, ``transport``, ``client``
    and ``cycle``, the request being answered, and get ``pause_writing``/``resume_writing`` from the
    transport when its buffer passes its high-water mark and drains again)."""

    class Guarded(base):  # type: ignore[misc, valid-type]
        _per_address: Counter = Counter()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._address = (self.client or ("?",))[0]
            Guarded._per_address[self._address] += 1
            self._watch = self._stall = None
            if Guarded._per_address[self._address] > CONNECTIONS_PER_ADDRESS:
                transport.close()
                return
            self._arm(None)

        def _arm(self, seen: Any) -> None:
            self._watch = self.loop.call_later(HEADER_SECONDS, self._check, seen)

        def _check(self, seen: Any) -> None:
            """Close the connection when no request began since the last check and none is
            being answered (its headers, or the next request's, are not in)."""
            if self.transport.is_closing():
                return
            cycle = self.cycle
            if cycle is seen and (cycle is None or cycle.response_complete):
                self.transport.close()
                return
            self._arm(cycle)

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._stall is None:
                self._stall = self.loop.call_later(SEND_SECONDS, self.transport.abort)

        def resume_writing(self) -> None:
            super().resume_writing()
            if self._stall is not None:
                self._stall.cancel()
                self._stall = None

        def connection_lost(self, exc: Exception | None) -> None:
            for timer in (self._watch, self._stall):
                if timer is not None:
                    timer.cancel()
            Guarded._per_address[self._address] -= 1
            if Guarded._per_address[self._address] <= 0:
                del Guarded._per_address[self._address]
            super().connection_lost(exc)

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded


async def read_within(stream: Any, seconds: float, on_chunk: Any) -> None:
    """Feed ``stream``'s chunks to ``on_chunk`` (awaited) until it ends; TimeoutError after
    ``seconds`` in all."""
    async with asyncio.timeout(seconds):
        async for chunk in stream:
            await on_chunk(chunk)
