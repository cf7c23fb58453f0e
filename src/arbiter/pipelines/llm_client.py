"""The one OpenAI-compatible chat client of the batch jobs (``arbiter oracle generate``, ``arbiter sample``).

:class:`ChatClient` sends one chat completion with explicit retries (HTTP 408/409/429/5xx, connection errors,
timeouts; exponential backoff with jitter, the server's ``Retry-After`` first) and counts requests and retries;
:func:`check_endpoint` asks the server for its models before a run, so a bad URL or model name stops the run
before any work. See ``docs/codegen.md`` ("Sampling: arbiter sample") and ``docs/oracle.md`` ("The writer").
"""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import dataclass, field
from typing import Any

#: HTTP statuses retried (the ``openai`` client's own retry set), besides 5xx.
RETRY_STATUSES = frozenset({408, 409, 429})


class EndpointError(ValueError):
    """The endpoint cannot be used: unreachable, refusing the key, or not serving the model."""


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an ``openai`` API error, else ``None``."""
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def is_retryable(exc: BaseException) -> bool:
    """True for errors worth retrying: HTTP 408/409/429/5xx, connection errors and timeouts
    (``openai.APIConnectionError``, which includes ``APITimeoutError``)."""
    import openai

    if isinstance(exc, openai.APIConnectionError):
        return True
    code = status_of(exc)
    return code is not None and (code in RETRY_STATUSES or code >= 500)


def retry_after_seconds(exc: BaseException) -> float | None:
    """The ``Retry-After`` (seconds) or ``retry-after-ms`` header of an API error's response, if any
    and parseable as a non-negative number; HTTP-date values are ignored."""
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        v = headers.get(name)
        if v is None:
            continue
        try:
            x = float(v) * scale
        except ValueError:
            continue
        if x >= 0:
            return x
    return None


def backoff_delay(attempt: int, *, base: float, cap: float, retry_after: float | None = None,
                  rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0).

    ``retry_after`` (from the server) wins, bounded by ``cap``. Otherwise exponential backoff with
    "equal jitter": ``d = min(cap, base * 2**attempt)``, then a uniform value in ``[d/2, d]``
    (``rng`` makes it reproducible).
    """
    if retry_after is not None:
        return max(0.0, min(retry_after, cap))
    d = min(cap, base * (2 ** attempt))
    r = (rng or random).random()
    return d / 2 + r * d / 2


def resolve(value: str | None, env: str) -> str | None:
    """``value`` when given, else the environment variable ``env`` (``None`` when unset or empty)."""
    return value if value else (os.environ.get(env) or None)


def request_params(temperature: float | None = None, top_p: float | None = None, max_tokens: int | None = None,
                   seed: int | None = None, extra_body: dict[str, Any] | None = None) -> dict[str, Any]:
    """The sampling parameters sent with each request: only those not ``None``."""
    params: dict[str, Any] = {}
    for name, value in (("temperature", temperature), ("top_p", top_p), ("max_tokens", max_tokens), ("seed", seed)):
        if value is not None:
            params[name] = value
    if extra_body:
        params["extra_body"] = extra_body
    return params


@dataclass
class RequestStats:
    """Counts of one run: HTTP ``requests`` sent (first attempts and retries), ``retries``, requests given up
    on (``failed``)."""

    requests: int = 0
    retries: int = 0
    failed: int = 0


class RequestFailed(Exception):
    """A request given up on: ``error`` is the last exception, ``attempts`` the HTTP attempts made."""

    def __init__(self, error: BaseException, attempts: int):
        super().__init__(f"{type(error).__name__}: {error}")
        self.error, self.attempts = error, attempts


@dataclass
class ChatClient:
    """An ``openai.AsyncOpenAI`` client (its own retries off) with our retry policy.

    ``max_retries``: retries after the first attempt (>= 0); ``backoff_base`` / ``backoff_max``: seconds for
    :func:`backoff_delay`; ``rng_seed`` fixes the jitter; ``timeout``: seconds per HTTP attempt.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    max_retries: int = 4
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    timeout: float = 600.0
    rng_seed: int | None = None
    stats: RequestStats = field(default_factory=RequestStats)

    def __post_init__(self) -> None:
        import openai

        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        self.rng = random.Random(self.rng_seed)
        self.client = openai.AsyncOpenAI(api_key=self.api_key or "EMPTY", base_url=self.base_url, max_retries=0,
                                         timeout=self.timeout)

    async def complete(self, messages: list[dict[str, str]], n: int, params: dict[str, Any]) -> tuple[Any, int]:
        """One chat completion (``n`` choices; ``n`` is sent only when > 1) and the HTTP attempts it took.
        Raises :class:`RequestFailed` when the error is not retryable or the retries are exhausted."""
        params = {**params, **({"n": n} if n > 1 else {})}
        attempt = 0
        while True:
            self.stats.requests += 1
            try:
                resp = await self.client.chat.completions.create(model=self.model, messages=messages, **params)
                return resp, attempt + 1
            except Exception as e:  # noqa: BLE001 - classified below
                if not is_retryable(e) or attempt >= self.max_retries:
                    self.stats.failed += 1
                    raise RequestFailed(e, attempt + 1) from e
                delay = backoff_delay(attempt, base=self.backoff_base, cap=self.backoff_max,
                                      retry_after=retry_after_seconds(e), rng=self.rng)
                self.stats.retries += 1
                attempt += 1
                await asyncio.sleep(delay)

    async def close(self) -> None:
        await self.client.close()


def choices_of(resp: Any) -> list[tuple[str, str | None]]:
    """``(content, finish_reason)`` of each choice of a response, in choice-index order (content ``""`` when
    the server sent none)."""
    choices = sorted(getattr(resp, "choices", None) or [], key=lambda c: getattr(c, "index", 0) or 0)
    out = []
    for c in choices:
        content = getattr(getattr(c, "message", None), "content", None)
        out.append((content if isinstance(content, str) else "", getattr(c, "finish_reason", None)))
    return out


def usage_of(resp: Any) -> dict[str, int] | None:
    """The response's token usage (``prompt_tokens``, ``completion_tokens``, ``total_tokens``), if sent."""
    usage = getattr(resp, "usage", None)
    if usage is None:
        return None
    return {k: getattr(usage, k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
            if isinstance(getattr(usage, k, None), int)}


async def check_endpoint(client: ChatClient) -> list[str]:
    """The models the endpoint serves (``GET /models``); raises :class:`EndpointError` naming the URL when it
    cannot be reached, refuses the key, or does not list ``client.model``. A server without ``/models``
    (HTTP 404/405) is not checked (``[]``)."""
    import openai

    url = client.base_url or "the default OpenAI endpoint"
    try:
        page = await client.client.models.list()
    except openai.APIConnectionError as e:
        raise EndpointError(f"--base-url {url}: cannot reach the endpoint ({e})") from None
    except openai.APIStatusError as e:
        if e.status_code in (404, 405):
            return []
        if e.status_code in (401, 403):
            raise EndpointError(f"--base-url {url}: the endpoint refuses the API key (HTTP {e.status_code}); "
                                f"set OPENAI_API_KEY") from None
        raise EndpointError(f"--base-url {url}: listing its models failed (HTTP {e.status_code}: {e.message})") from None
    served = [m.id for m in getattr(page, "data", None) or []]
    if client.model not in served:
        raise EndpointError(f"--model {client.model!r} is not served by {url} (it serves: "
                            f"{', '.join(served[:20]) or 'no models'})")
    return served


__all__ = ["ChatClient", "EndpointError", "RETRY_STATUSES", "RequestFailed", "RequestStats", "backoff_delay",
           "check_endpoint", "choices_of", "is_retryable", "request_params", "resolve", "retry_after_seconds",
           "status_of", "usage_of"]
