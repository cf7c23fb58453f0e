"""A real local OpenAI-compatible chat server for tests (FastAPI + uvicorn on a free port).

Not a test file: tests import :class:`FakeOpenAIServer` and talk to it over HTTP with the real
``openai`` client, exactly as ``arbiter oracle generate`` talks to vLLM or a hosted API.

Implements ``POST /v1/chat/completions`` (with ``n``) and ``GET /v1/models``. Each request is matched
to a :class:`Script` (first match wins): ``match`` is a string that must occur in some message's
content, or a callable taking the request's ``messages`` list. The script answers with its
``completions`` in rotation (one per choice) and can inject failures: the first ``fail_first``
requests for that script get HTTP ``fail_status`` (a status or a list cycled through), with a
``Retry-After`` header when ``retry_after`` is set. ``choices_cap`` makes it return fewer choices
than ``n`` asks for, as some servers silently do. ``delay`` seconds are slept before answering, so
tests can observe concurrency (``max_inflight``). An unmatched request gets HTTP 404.

Every request is logged in :attr:`FakeOpenAIServer.log` (script name, ``n``, model, temperature,
status returned, the messages). With ``api_key`` set, a request without ``Authorization: Bearer
<api_key>`` gets HTTP 401. With ``supports_n=False`` a request with ``n > 1`` gets HTTP 400, as
servers without ``n`` do. ``models`` are the names ``GET /v1/models`` lists; a script with ``model`` set
answers only requests for that model (two "models" on one server). ``fail_every=k`` fails every k-th
request of a script (after ``fail_first``) with ``fail_status``: a server that fails some of the time.

A hostile or broken server: ``raw(n, k)`` makes the script answer request ``k`` (1-based) with its own body
instead of a completion, for the first ``raw_first`` requests (0: all): bytes, or an iterable of byte chunks
streamed as they come (:func:`completion_bytes` builds a completion with any choices, lone surrogates kept as
``\\u`` escapes; :func:`endless`, :func:`huge_choices` stream bodies that never end or are huge, each bounded
so the server stops by itself). ``drip`` seconds between single bytes sends the body one byte at a time.
:attr:`FakeOpenAIServer.sent` holds ``[script name, body bytes]`` of each streamed answer: what got out before
the client hung up.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse


@dataclass
class Script:
    """Scripted behaviour for the requests it matches (see module docstring)."""

    name: str
    match: str | Callable[[list[dict[str, Any]]], bool]
    completions: Sequence[str] = ("",)
    fail_first: int = 0
    fail_status: int | Sequence[int] = 500
    retry_after: float | None = None
    delay: float = 0.0
    finish_reason: str = "stop"
    choices_cap: int | None = None
    model: str | None = None
    fail_every: int = 0
    raw: Callable[[int, int], Any] | None = None
    raw_first: int = 0
    drip: float = 0.0
    # counters (mutated by the server)
    requests: int = 0
    served: int = 0

    def matches(self, messages: list[dict[str, Any]], model: str | None = None) -> bool:
        if self.model is not None and model != self.model:
            return False
        if callable(self.match):
            return bool(self.match(messages))
        return any(self.match in str(m.get("content", "")) for m in messages)


def completion_bytes(choices: Any, usage: Any = None) -> bytes:
    """A chat-completion body with exactly these ``choices`` (any JSON value: the server's own mistakes kept);
    strings holding lone surrogates are written as ``\\ud800`` escapes, as a JSON encoder that does not check
    them would."""
    return json.dumps({"id": "chatcmpl-raw", "object": "chat.completion", "created": 0, "model": "fake-model",
                       "choices": choices, "usage": usage}, ensure_ascii=True).encode()


def choice(i: Any, content: Any, finish: Any = "stop") -> dict[str, Any]:
    return {"index": i, "message": {"role": "assistant", "content": content}, "finish_reason": finish}


def endless(chunk: int = 1 << 16, limit_seconds: float = 120.0):
    """A body that never ends (the server stops after ``limit_seconds`` whatever the client does)."""
    def make(n: int, k: int):
        async def gen():
            yield b'{"choices": [{"index": 0, "message": {"content": "'
            end = time.monotonic() + limit_seconds
            block = b"a" * chunk
            while time.monotonic() < end:
                yield block
                await asyncio.sleep(0)
        return gen()
    return make


def huge_choices(mb_each: int = 100):
    """``n`` choices of ``mb_each`` MB each, streamed (never held whole by the server)."""
    def make(n: int, k: int):
        def gen():
            yield b'{"object": "chat.completion", "choices": ['
            for i in range(n):
                yield (b"," if i else b"") + b'{"index": %d, "finish_reason": "length", "message": {"content": "' % i
                for _ in range(mb_each):
                    yield b"x" * (1 << 20)
                yield b'"}}'
            yield b"]}"
        return gen()
    return make


@dataclass
class LogEntry:
    """One request the server received."""

    script: str | None
    n: int
    model: str | None
    temperature: float | None
    status: int
    messages: list[dict[str, Any]] = field(repr=False, default_factory=list)
    body: dict[str, Any] = field(repr=False, default_factory=dict)


class FakeOpenAIServer:
    """Start with ``with FakeOpenAIServer(scripts) as srv:`` (or :meth:`start` / :meth:`stop`);
    point the client at :attr:`base_url` (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, scripts: Sequence[Script], *, api_key: str | None = None, supports_n: bool = True,
                 max_n: int = 128, models: Sequence[str] = ("fake-model",)):
        self.models = list(models)
        self.scripts = list(scripts)
        self.api_key = api_key
        self.supports_n = supports_n
        self.max_n = max_n
        self.log: list[LogEntry] = []
        self.sent: list[list] = []  # [script name, body bytes] of each streamed answer
        self.inflight = 0
        self.max_inflight = 0
        self._lock = threading.Lock()
        self._counter = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self.port: int | None = None
        self.app = self._make_app()

    # ---------------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, name: str) -> Script:
        return next(s for s in self.scripts if s.name == name)

    def requests_for(self, name: str) -> list[LogEntry]:
        return [e for e in self.log if e.script == name]

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
        kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                429: "rate_limit_error"}.get(status, "server_error")
        return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": None}},
                            status_code=status, headers=headers)

    def _make_app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/v1/models")
        async def models() -> dict[str, Any]:
            return {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "tests"} for m in self.models]}

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            messages = body.get("messages") or []
            n = int(body.get("n") or 1)
            entry = LogEntry(None, n, body.get("model"), body.get("temperature"), 200, messages, body)
            with self._lock:
                self.log.append(entry)
                self.inflight += 1
                self.max_inflight = max(self.max_inflight, self.inflight)
            try:
                if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
                    entry.status = 401
                    return self._error(401, "Incorrect API key provided")
                if n > 1 and not self.supports_n:
                    entry.status = 400
                    return self._error(400, "n > 1 is not supported by this server")
                if not 1 <= n <= self.max_n:
                    entry.status = 400
                    return self._error(400, f"n must be in 1..{self.max_n}")
                script = next((s for s in self.scripts if s.matches(messages, body.get("model"))), None)
                if script is None:
                    entry.status = 404
                    return self._error(404, "no script matches this request")
                entry.script = script.name
                with self._lock:
                    script.requests += 1
                    k = script.requests
                if script.delay:
                    await asyncio.sleep(script.delay)
                periodic = script.fail_every and k > script.fail_first and (k - script.fail_first) % script.fail_every == 0
                if k <= script.fail_first or periodic:
                    statuses = [script.fail_status] if isinstance(script.fail_status, int) else list(script.fail_status)
                    status = statuses[(k - 1) % len(statuses)]
                    entry.status = status
                    headers = {"retry-after": str(script.retry_after)} if script.retry_after is not None else None
                    return self._error(status, f"injected failure {k}/{script.fail_first}", headers)
                if script.raw is not None and (not script.raw_first or k <= script.raw_first):
                    return self._raw(script.name, script.raw(n, k), script.drip)
                choices = []
                with self._lock:
                    for i in range(n if script.choices_cap is None else min(n, script.choices_cap)):
                        text = script.completions[script.served % len(script.completions)]
                        script.served += 1
                        choices.append({"index": i, "message": {"role": "assistant", "content": text},
                                        "finish_reason": script.finish_reason, "logprobs": None})
                    self._counter += 1
                    rid = self._counter
                return {
                    "id": f"chatcmpl-fake-{rid}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model") or "fake-model",
                    "choices": choices,
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10 * n, "total_tokens": 10 + 10 * n},
                }
            finally:
                with self._lock:
                    self.inflight -= 1

        return app

    def _raw(self, name: str, body: Any, drip: float) -> Response:
        """``body`` as it is (bytes), dripped one byte every ``drip`` seconds, or streamed (chunks)."""
        if isinstance(body, bytes) and not drip:
            return Response(body, media_type="application/json")
        entry = [name, 0]
        self.sent.append(entry)

        async def stream():
            if isinstance(body, bytes):
                for i in range(len(body)):
                    yield body[i:i + 1]
                    entry[1] += 1
                    await asyncio.sleep(drip)
            elif hasattr(body, "__aiter__"):
                async for chunk in body:
                    yield chunk
                    entry[1] += len(chunk)
            else:
                for chunk in body:
                    yield chunk
                    entry[1] += len(chunk)
                    await asyncio.sleep(0)

        return StreamingResponse(stream(), media_type="application/json")

    # ---------------------------------------------------------------------------------------------

    def start(self, timeout: float = 20.0) -> "FakeOpenAIServer":
        """Bind a free port on 127.0.0.1 and serve in a background thread; returns when ready.
        Raises ``RuntimeError`` if the server does not start within ``timeout`` seconds."""
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="fake-openai-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake OpenAI server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
