"""The one OpenAI-compatible chat client of the batch jobs (``arbiter oracle generate``, ``arbiter sample``).

:class:`ChatClient` sends one chat completion through the ``openai`` client, whose own retries handle HTTP
408/409/429/5xx, connection errors and timeouts (exponential backoff, the server's ``Retry-After`` first), over a
guarded transport (:mod:`arbiter.pipelines.llm_http`: one deadline per attempt, a size cap). The answer is
checked (:mod:`arbiter.pipelines.llm_answer`); a malformed one is asked again, then given up on. Every failure
of a request ends as :class:`RequestFailed`, never another exception. :func:`check_endpoint` asks the server
for its models before a run. See ``docs/codegen.md`` ("Sampling: arbiter sample") and ``docs/oracle.md``.
"""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import dataclass, field
from typing import Any

from arbiter.pipelines.llm_answer import Completion, MalformedAnswer, parse_completion
from arbiter.pipelines.llm_http import ATTEMPTS, guarded_http_client

#: Defaults shared by ``arbiter sample`` and ``arbiter oracle generate``.
DEFAULT_CONCURRENCY = 8
DEFAULT_MAX_RETRIES = 6
DEFAULT_TIMEOUT = 600.0
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024


class EndpointError(ValueError):
    """The endpoint cannot be used: unreachable, refusing the key, or not serving the model."""


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an ``openai`` API error, else ``None``."""
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


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
    """Counts of one run: HTTP ``requests`` sent (first attempts and retries), ``retries`` (the ``openai``
    client's, and answers asked again because they were malformed), ``malformed`` answers."""

    requests: int = 0
    retries: int = 0
    malformed: int = 0


class RequestFailed(Exception):
    """A request given up on: ``error`` is the last exception, ``attempts`` the HTTP attempts made."""

    def __init__(self, error: BaseException, attempts: int):
        cause = error.__cause__
        why = f" ({type(cause).__name__}: {cause})" if cause is not None and str(cause) not in str(error) else ""
        super().__init__(f"{type(error).__name__}: {error}{why}")
        self.error, self.attempts = error, attempts


@dataclass
class ChatClient:
    """An ``openai.AsyncOpenAI`` client (its own retries: ``max_retries``) over a guarded transport.

    ``timeout``: seconds of one HTTP attempt, from the request to the answer's last byte; ``max_response_bytes``:
    the largest answer read; ``backoff_base`` / ``backoff_max`` / ``rng_seed``: the wait before a malformed
    answer is asked again (:func:`backoff_delay`), at most ``max_retries`` times.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    timeout: float = DEFAULT_TIMEOUT
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    rng_seed: int | None = None
    stats: RequestStats = field(default_factory=RequestStats)

    def __post_init__(self) -> None:
        import openai

        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if not self.timeout > 0 or self.max_response_bytes < 1:
            raise ValueError(f"timeout and max_response_bytes must be positive, got {self.timeout}, "
                             f"{self.max_response_bytes}")
        self.rng = random.Random(self.rng_seed)
        self._reasks = 0
        http, self._attempts = guarded_http_client(self.timeout, self.max_response_bytes)
        self.client = openai.AsyncOpenAI(api_key=self.api_key or "EMPTY", base_url=self.base_url,
                                         max_retries=self.max_retries, timeout=self.timeout, http_client=http)

    async def complete(self, messages: list[dict[str, Any]], n: int, params: dict[str, Any]) -> tuple[Completion, int]:
        """One chat completion (``n`` choices; ``n`` is sent only when > 1) and the HTTP attempts it took.
        Raises :class:`RequestFailed` for every failure: an HTTP error the client gave up on, a deadline, an
        answer over the size cap, a malformed answer asked for ``max_retries + 1`` times, anything else."""
        params = {**params, **({"n": n} if n > 1 else {})}
        attempts = [0]
        token = ATTEMPTS.set(attempts)
        try:
            for ask in range(self.max_retries + 1):
                try:
                    raw = await self.client.chat.completions.with_raw_response.create(
                        model=self.model, messages=messages, **params)
                    return parse_completion(raw.http_response.content, n), attempts[0]
                except MalformedAnswer as exc:
                    self.stats.malformed += 1
                    if ask == self.max_retries:
                        raise RequestFailed(exc, attempts[0]) from exc
                    self._reasks += 1
                    await asyncio.sleep(backoff_delay(ask, base=self.backoff_base, cap=self.backoff_max, rng=self.rng))
                except Exception as exc:  # noqa: BLE001 - every failure of one request is recorded, never raised
                    raise RequestFailed(exc, attempts[0]) from exc
            raise AssertionError("unreachable")
        finally:
            ATTEMPTS.reset(token)
            self.stats.requests, self.stats.retries = self._attempts.requests, self._attempts.retries + self._reasks

    async def close(self) -> None:
        await self.client.close()


async def check_endpoint(client: ChatClient) -> list[str]:
    """The models the endpoint serves (``GET /models``); raises :class:`EndpointError` naming the URL when it
    cannot be reached, refuses the key, or does not list ``client.model``. A server without ``/models``
    (HTTP 404/405) is not checked (``[]``)."""
    import openai

    url = client.base_url or "the default OpenAI endpoint"
    try:
        page = await client.client.with_options(max_retries=min(client.max_retries, 1)).models.list()
        served = [m.id for m in getattr(page, "data", None) or []]
    except openai.APIConnectionError as e:
        raise EndpointError(f"--base-url {url}: cannot reach the endpoint ({e})") from None
    except openai.APIStatusError as e:
        if e.status_code in (404, 405):
            return []
        if e.status_code in (401, 403):
            raise EndpointError(f"--base-url {url}: the endpoint refuses the API key (HTTP {e.status_code}); "
                                f"set OPENAI_API_KEY") from None
        raise EndpointError(f"--base-url {url}: listing its models failed (HTTP {e.status_code}: {e.message})") from None
    except Exception as e:  # noqa: BLE001 - an answer that is no list of models
        raise EndpointError(f"--base-url {url}: GET /models gave no list of models ({type(e).__name__}: "
                            f"{str(e)[:200]})") from None
    if client.model not in served:
        raise EndpointError(f"--model {client.model!r} is not served by {url} (it serves: "
                            f"{', '.join(served[:20]) or 'no models'})")
    return served


__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_MAX_RESPONSE_BYTES", "DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT", "ChatClient",
           "Completion", "EndpointError", "RequestFailed", "RequestStats", "backoff_delay", "check_endpoint",
           "request_params", "resolve", "status_of"]
