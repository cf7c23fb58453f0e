"""The HTTP transport under the ``openai`` client of the batch jobs: one deadline per attempt and a size cap.

``openai`` (through httpx) bounds each read of a body, not the attempt: a server that drips one byte a second
keeps an attempt alive for ever. :class:`GuardedTransport` reads each answer whole inside one deadline
(connect to last byte) and at most ``max_bytes``, so the client never holds an endless or huge body; the
``openai`` client then retries a deadline like any timeout. It also counts the HTTP attempts. See
``docs/codegen.md`` ("Sampling: arbiter sample").
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import zlib
from dataclasses import dataclass, field
from typing import Any

#: The HTTP attempts of the request being made in this task: a list with one counter, set by the caller.
ATTEMPTS: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("arbiter_llm_attempts", default=None)


class ResponseTooLarge(Exception):
    """An answer over the size cap: not retried (a server that sends 100 MB sends it again)."""


def httpx_module() -> Any:
    """The httpx package the installed ``openai`` client is built on (``httpx``, or ``httpx2`` in openai 3)."""
    import openai

    top = next(c.__module__.split(".")[0] for c in openai.DefaultAsyncHttpxClient.__mro__
               if not c.__module__.startswith("openai"))
    return importlib.import_module(top)


@dataclass
class AttemptCounts:
    """HTTP attempts of chat completions: ``requests`` (first attempts and the client's retries), ``retries``."""

    requests: int = 0
    retries: int = 0


@dataclass
class GuardedTransport:
    """Wraps an httpx async transport: ``seconds`` from the request to the answer's last byte, at most
    ``max_bytes`` of body (after gzip/deflate), counted in ``counts`` (chat completions only)."""

    inner: Any
    seconds: float
    max_bytes: int
    counts: AttemptCounts = field(default_factory=AttemptCounts)

    async def handle_async_request(self, request: Any) -> Any:
        hx = httpx_module()
        if request.url.path.endswith("/chat/completions"):
            self.counts.requests += 1
            self.counts.retries += request.headers.get("x-stainless-retry-count", "0") not in ("", "0")
            attempts = ATTEMPTS.get()
            if attempts is not None:
                attempts[0] += 1
        try:
            status, headers, body, extensions = await asyncio.wait_for(self._fetch(request), self.seconds)
        except asyncio.TimeoutError:
            raise hx.ReadTimeout(f"no complete answer within {self.seconds:g} s (the deadline of one attempt)",
                                 request=request) from None
        return hx.Response(status, headers=headers, content=body, request=request, extensions=extensions)

    async def _fetch(self, request: Any) -> tuple[int, list[tuple[str, str]], bytes, dict]:
        resp = await self.inner.handle_async_request(request)
        try:
            encoding = resp.headers.get("content-encoding", "identity").strip().lower()
            decode = _decoder(encoding, self.max_bytes)
            chunks, size = [], 0
            async for chunk in resp.aiter_raw():
                data = decode(chunk)
                size += len(data)
                if size > self.max_bytes:
                    raise ResponseTooLarge(f"the answer is larger than {self.max_bytes:,} bytes (the size cap); "
                                           "not read further")
                chunks.append(data)
        finally:
            await resp.aclose()
        headers = [(k, v) for k, v in resp.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return resp.status_code, headers, b"".join(chunks), dict(resp.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> "GuardedTransport":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def _decoder(encoding: str, max_bytes: int) -> Any:
    """Bytes -> decoded bytes for a ``Content-Encoding`` (identity, gzip, deflate), each call bounded."""
    if encoding in ("", "identity"):
        return lambda chunk: chunk
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise ResponseTooLarge(f"the answer's Content-Encoding {encoding!r} is not read (identity, gzip or deflate)")
    z = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected

    def decode(chunk: bytes) -> bytes:
        out = z.decompress(chunk, max_bytes + 1)  # a bomb stops at the cap: the rest is never inflated
        if z.unconsumed_tail:
            raise ResponseTooLarge(f"the answer inflates past {max_bytes:,} bytes (the size cap)")
        return out

    return decode


def guarded_http_client(seconds: float, max_bytes: int) -> tuple[Any, AttemptCounts]:
    """An httpx ``AsyncClient`` for ``openai.AsyncOpenAI(http_client=...)`` whose transport is guarded, and its
    attempt counts."""
    import openai

    hx = httpx_module()
    transport = GuardedTransport(hx.AsyncHTTPTransport(), seconds, max_bytes)
    client = openai.DefaultAsyncHttpxClient(transport=transport, timeout=seconds,
                                           headers={"Accept-Encoding": "identity"})
    return client, transport.counts


__all__ = ["ATTEMPTS", "AttemptCounts", "GuardedTransport", "ResponseTooLarge", "guarded_http_client",
           "httpx_module"]
