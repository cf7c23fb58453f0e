"""The server-wide budget of request-body bytes being read and parsed at once: a body over
:data:`LARGE_BODY` waits for its share (:data:`BODY_COPIES` times its size) before it is read,
and holds it until its request ends. See ``docs/serve.md``, "Memory"."""

from __future__ import annotations

import asyncio

#: Bodies larger than this wait for their share of the budget (smaller ones are read at once).
LARGE_BODY = 1 << 20
#: Copies of a body that exist while it is parsed: its bytes or text, the parsed strings, the
#: decoded ``files`` (the share a body takes: this times its size, at most the whole budget).
BODY_COPIES = 3


class ByteBudget:
    """Bytes that requests' bodies may hold at once. ``held`` never exceeds ``total``: a request
    waits (in arrival order of wake-ups) until its share fits; ``peak`` is the most ever held."""

    def __init__(self, total: int):
        if total < 1:
            raise ValueError(f"a body budget of at least 1 byte, got {total}")
        self.total = total
        self.held = 0
        self.peak = 0
        self.waited = 0  # shares that had to wait
        self._cond: asyncio.Condition | None = None

    def share(self, body_bytes: int) -> int:
        """What a body of ``body_bytes`` takes: :data:`BODY_COPIES` times it, at most ``total``."""
        return min(BODY_COPIES * body_bytes, self.total)

    async def acquire(self, n: int) -> None:
        """Wait until ``n`` more bytes fit (``n`` at most ``total``), then hold them."""
        if not 0 <= n <= self.total:
            raise ValueError(f"a share of {n} bytes does not fit a budget of {self.total}")
        if self._cond is None:
            self._cond = asyncio.Condition()
        async with self._cond:
            if self.held + n > self.total:
                self.waited += 1
            await self._cond.wait_for(lambda: self.held + n <= self.total)
            self.held += n
            self.peak = max(self.peak, self.held)

    async def release(self, n: int) -> None:
        assert self._cond is not None and 0 <= n <= self.held, (n, self.held)
        async with self._cond:
            self.held -= n
            self._cond.notify_all()
