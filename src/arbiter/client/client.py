"""The sync and async clients of ``arbiter serve``; retries with backoff. See ``docs/serve.md``."""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from typing import Any, Sequence

import httpx

from arbiter.judge import jsonvalues
from arbiter.judge.codec import task_to_json, verdict_from_json
from arbiter.judge.task import Task
from arbiter.judge.verdict import Verdict
from arbiter.rewards.codegen import InvalidTask, RewardResult, SandboxFailure
from arbiter.rewards.wire import item_to_wire, to_wire

#: HTTP statuses that mean "try again later" (a tenant over its caps, overload, our sandbox failed, draining).
RETRY_STATUSES = (429, 502, 503, 504)


class ServerError(RuntimeError):
    """The service refused the request for a reason retrying cannot fix (401, 413, 422, ...)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"arbiter serve answered {status}: {message}")
        self.status = status


def _headers(token: str | None) -> dict[str, str]:
    token = token if token is not None else os.environ.get("ARBITER_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


def _delay(attempt: int, response: httpx.Response | None, base: float) -> float:
    after = response.headers.get("retry-after") if response is not None else None
    wait = float(after) if after and after.replace(".", "", 1).isdigit() else base * 2 ** attempt
    return min(30.0, wait) * (0.5 + random.random())


def _check(r: httpx.Response) -> Any:
    if r.status_code != 200:
        try:
            message = r.json().get("message", r.text)
        except ValueError:
            message = r.text
        raise ServerError(r.status_code, message[:2000])
    return r.json()


JSON_HEADERS = {"Content-Type": "application/json"}


def _score_body(items: Sequence[tuple], options: dict[str, Any] | None) -> str:
    """``/v1/score``'s body: each item in its wire form (:mod:`arbiter.rewards.wire`: numpy
    values, bytes and the like reach the server as the same values)."""
    return jsonvalues.dumps({"items": [item_to_wire(it) for it in items],
                             "options": to_wire(dict(options or {}))})


def _result(d: dict[str, Any]) -> RewardResult:
    """A ``/v1/score`` answer as ``compute_score`` gives it, or the exception it raised, raised."""
    kind = d.get("type")
    if "error" not in d:
        return RewardResult(d)
    if kind == "SandboxFailure":
        raise SandboxFailure(d["error"], row=d.get("row", ""), reason=d.get("reason", ""))
    if kind == "InvalidTask":
        raise InvalidTask(d["error"], row=d.get("row", ""))
    raise (TypeError if kind == "TypeError" else ValueError)(d["error"])


class _Base:
    def __init__(self, url: str | None = None, *, token: str | None = None, attempts: int = 5,
                 backoff: float = 0.5, timeout: float = 600.0):
        url = url or os.environ.get("ARBITER_URL")
        if not url:
            raise ValueError("no arbiter serve URL: pass url= or set ARBITER_URL")
        self.url, self.attempts, self.backoff = url.rstrip("/"), max(1, attempts), backoff
        self.headers, self.timeout = _headers(token), timeout

    def _give_up(self, what: str, last: str) -> SandboxFailure:
        return SandboxFailure(f"arbiter serve at {self.url}: {what} failed after {self.attempts} attempts: {last}",
                              reason=last)


class Client(_Base):
    """Synchronous client. ``url``: e.g. ``http://127.0.0.1:8080`` (default ``ARBITER_URL``);
    ``token``: default ``ARBITER_TOKEN``. Raises :class:`SandboxFailure` once ``attempts``
    tries met overload, a connection error or a sandbox failure; :class:`ServerError` otherwise."""

    def __init__(self, url: str | None = None, **kw: Any):
        super().__init__(url, **kw)
        self._http = httpx.Client(timeout=self.timeout, headers=self.headers)

    def post(self, path: str, body: dict[str, Any] | str) -> Any:
        """POST with retries (``body``: JSON data, or its text); the JSON answer."""
        content = body if isinstance(body, str) else jsonvalues.dumps(body)
        last = ""
        for attempt in range(self.attempts):
            response = None
            try:
                response = self._http.post(self.url + path, content=content, headers=JSON_HEADERS)
                if response.status_code not in RETRY_STATUSES:
                    return _check(response)
                last = f"HTTP {response.status_code}: {response.text[:300]}"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            if attempt + 1 < self.attempts:
                time.sleep(_delay(attempt, response, self.backoff))
        raise self._give_up(path, last)

    def judge(self, tasks: Sequence[Task]) -> list[Verdict]:
        """Verdicts of ``tasks``, in order."""
        answer = self.post("/v1/judge", {"tasks": [task_to_json(t) for t in tasks]})
        return [verdict_from_json(v) for v in answer["verdicts"]]

    def score(self, items: Sequence[tuple], options: dict[str, Any] | None = None) -> list[RewardResult]:
        """``compute_score`` of each ``(data_source, solution_str, ground_truth, extra_info)``, in
        order; raises what it raises. A sandbox failure is retried like overload."""
        body = _score_body(items, options)
        for attempt in range(self.attempts):
            answers = self.post("/v1/score", body)["results"]
            failed = [a for a in answers if a.get("type") == "SandboxFailure"]
            if not failed or attempt + 1 == self.attempts:
                return [_result(a) for a in answers]
            time.sleep(_delay(attempt, None, self.backoff))
        raise AssertionError("unreachable")

    def run_code(self, **request: Any) -> dict[str, Any]:
        """SandboxFusion ``/run_code`` (fields as its request)."""
        return self.post("/run_code", request)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncClient(_Base):
    """:class:`Client` for asyncio (same arguments, methods are coroutines)."""

    def __init__(self, url: str | None = None, **kw: Any):
        super().__init__(url, **kw)
        self._http = httpx.AsyncClient(timeout=self.timeout, headers=self.headers)

    async def post(self, path: str, body: dict[str, Any] | str) -> Any:
        content = body if isinstance(body, str) else jsonvalues.dumps(body)
        last = ""
        for attempt in range(self.attempts):
            response = None
            try:
                response = await self._http.post(self.url + path, content=content, headers=JSON_HEADERS)
                if response.status_code not in RETRY_STATUSES:
                    return _check(response)
                last = f"HTTP {response.status_code}: {response.text[:300]}"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            if attempt + 1 < self.attempts:
                await asyncio.sleep(_delay(attempt, response, self.backoff))
        raise self._give_up(path, last)

    async def judge(self, tasks: Sequence[Task]) -> list[Verdict]:
        answer = await self.post("/v1/judge", {"tasks": [task_to_json(t) for t in tasks]})
        return [verdict_from_json(v) for v in answer["verdicts"]]

    async def score(self, items: Sequence[tuple], options: dict[str, Any] | None = None) -> list[RewardResult]:
        body = _score_body(items, options)
        for attempt in range(self.attempts):
            answers = (await self.post("/v1/score", body))["results"]
            if not any(a.get("type") == "SandboxFailure" for a in answers) or attempt + 1 == self.attempts:
                return [_result(a) for a in answers]
            await asyncio.sleep(_delay(attempt, None, self.backoff))
        raise AssertionError("unreachable")

    async def run_code(self, **request: Any) -> dict[str, Any]:
        return await self.post("/run_code", request)

    async def aclose(self) -> None:
        await self._http.aclose()


_shared: dict[tuple[int, str], Client] = {}
_shared_lock = threading.Lock()


def shared_client(url: str) -> Client:
    """The one :class:`Client` of ``url`` in this process (made on first use; a forked child makes
    its own): what ``compute_score(url=)``, ``compute_score_batch(url=)`` and the trainer adapters
    share, so their requests go through one connection pool per server."""
    with _shared_lock:
        key = (os.getpid(), url)
        if key not in _shared:
            _shared[key] = Client(url)
        return _shared[key]
