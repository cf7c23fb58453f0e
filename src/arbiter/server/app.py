"""The FastAPI application: auth, size caps, the routes over the judge pool. See ``docs/serve.md``."""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import ValidationError

from arbiter.server import native
from arbiter.server.config import ServerConfig
from arbiter.server.metrics import Metrics
from arbiter.server.pool import JudgePool, Overloaded, watch
from arbiter.server.programs import ProgramRuns
from arbiter.server.runcode import BadRequest, OurFailure, RunCodeRequest

OPEN_PATHS = ("/healthz",)
ROUTES = ("/run_code", "/v1/judge", "/v1/score", "/healthz", "/metrics")


@dataclass
class Service:
    """What the routes share: settings, counters, the judge pool, ``/run_code``'s program groups."""

    cfg: ServerConfig
    health: Callable[[], dict[str, Any]]
    metrics: Metrics = field(default_factory=Metrics)
    health_report: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.pool = JudgePool(self.cfg.workers, self.cfg.queue, self.metrics)
        self.programs = ProgramRuns(self.pool, self.cfg, self.metrics)

    async def body(self, request: Request) -> Any:
        """The JSON body, read up to ``max_body_bytes`` (:class:`BadRequest` ``413:`` past it)."""
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > self.cfg.max_body_bytes:
                raise BadRequest(f"413:request body over {self.cfg.max_body_bytes} bytes")
        try:
            return json.loads(data)
        except ValueError as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None

    def refuse(self, exc: Exception, overload_status: int = 503) -> JSONResponse:
        """413/422 for a refused request; ``overload_status`` + ``Retry-After`` for overload."""
        if isinstance(exc, Overloaded):
            self.metrics.refused += 1
            return error(overload_status, str(exc), **{"Retry-After": str(exc.retry_after)})
        msg = str(exc)
        return error(413, msg[4:]) if msg.startswith("413:") else error(422, msg)


def error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"status": "SandboxError" if status >= 500 else "Refused", "message": message},
                        status_code=status, headers=headers or None)


def create_app(cfg: ServerConfig, *, health: Callable[[], dict[str, Any]] | None = None) -> FastAPI:
    """The service. ``health``: returns the doctor's report as a dict (default
    :func:`arbiter.sandbox.doctor.diagnose`, run once and kept)."""
    svc = Service(cfg, health or _diagnose)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        svc.pool.shutdown()

    app = FastAPI(title="arbiter", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    _guard(app, svc)
    _run_code_route(app, svc)
    _batch_routes(app, svc)
    _info_routes(app, svc)
    app.state.service = svc
    return app


def _guard(app: FastAPI, svc: Service) -> None:
    """Bearer token (constant-time compare; 401 runs nothing), body size (413), latency. A plain
    ASGI middleware, so that the routes still see the client's disconnect."""
    cfg, expected = svc.cfg, f"Bearer {svc.cfg.token}".encode()

    class Guard:
        def __init__(self, inner):
            self.inner = inner

        async def __call__(self, scope, receive, send):
            if scope["type"] != "http":
                return await self.inner(scope, receive, send)
            headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
            refused = None
            if cfg.token and scope["path"] not in OPEN_PATHS:
                if not hmac.compare_digest(headers.get("authorization", b""), expected):
                    refused = error(401, "missing or wrong API token (Authorization: Bearer ...)")
            length = headers.get("content-length", b"")
            if refused is None and length.isdigit() and int(length) > cfg.max_body_bytes:
                refused = error(413, f"request body of {int(length)} bytes; at most {cfg.max_body_bytes}")
            if refused is not None:
                return await refused(scope, receive, send)
            started = time.monotonic()
            try:
                await self.inner(scope, receive, send)
            finally:
                svc.metrics.observe(scope["path"] if scope["path"] in ROUTES else "other", time.monotonic() - started)

    app.add_middleware(Guard)


def _run_code_route(app: FastAPI, svc: Service) -> None:
    @app.post("/run_code")
    async def run_code_route(request: Request):
        """SandboxFusion's endpoint; overload and our own failures are 504 (verl retries 504 only)."""
        try:
            req = RunCodeRequest.model_validate(await svc.body(request))
            answer = await watch(svc.programs.submit(req), request.is_disconnected)
        except ValidationError as exc:
            return error(422, f"bad /run_code request: {exc.errors(include_url=False)}")
        except (BadRequest, Overloaded) as exc:
            return svc.refuse(exc, 504)
        except OurFailure as exc:
            svc.metrics.sandbox_errors += 1
            return error(504, f"arbiter's sandbox failed (retry): {exc}", **{"Retry-After": "1"})
        svc.metrics.run_code_answer(answer["status"])
        return answer


def _batch_routes(app: FastAPI, svc: Service) -> None:
    async def batch(request: Request, parse, calls, key: str):
        try:
            b = native.Batch(svc.pool, calls(parse(await svc.body(request), svc.cfg)))
        except (BadRequest, Overloaded) as exc:
            return svc.refuse(exc)
        if request.query_params.get("stream") in ("1", "true"):
            return StreamingResponse(b.lines(key, request.is_disconnected), media_type="application/x-ndjson")
        return {key + "s": await b.results(request.is_disconnected)}

    @app.post("/v1/judge")
    async def judge_route(request: Request):
        """``{"tasks": [Task JSON]}`` -> ``{"verdicts": [Verdict JSON]}`` (docs/codec.md)."""
        return await batch(request, native.parse_tasks,
                           lambda tasks: [lambda t=t: native.judge_one(t, svc.metrics) for t in tasks], "verdict")

    @app.post("/v1/score")
    async def score_route(request: Request):
        """``{"items": [verl item], "options": {...}}`` -> ``{"results": [compute_score result]}``."""
        def calls(parsed):
            items, opts = parsed
            return [lambda it=it: native.score_one(it, opts, svc.metrics) for it in items]

        return await batch(request, native.parse_score, calls, "result")


def _info_routes(app: FastAPI, svc: Service) -> None:
    @app.get("/healthz")
    async def healthz():
        """The doctor's answer: 200 when this node can isolate, else 503."""
        if svc.health_report is None:
            svc.health_report = await asyncio.to_thread(svc.health)
        return JSONResponse(svc.health_report, status_code=200 if svc.health_report.get("isolated") else 503)

    @app.get("/metrics")
    async def metrics_route():
        return PlainTextResponse(svc.metrics.text(), media_type="text/plain; version=0.0.4")


def _diagnose() -> dict[str, Any]:
    from dataclasses import asdict

    from arbiter.sandbox.doctor import diagnose

    return asdict(diagnose())
