"""The FastAPI application: auth, size caps, the routes over the judge pool. See ``docs/serve.md``."""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from pydantic import ValidationError

from arbiter.judge.run_once import WarmSandboxes
from arbiter.server import native
from arbiter.server.config import ServerConfig
from arbiter.server.metrics import Metrics
from arbiter.server.pool import JudgePool, Overloaded
from arbiter.server.runcode import BadRequest, OurFailure, RunCodeRequest, run_code

OPEN_PATHS = ("/healthz",)


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"status": "SandboxError" if status >= 500 else "Refused", "message": message,
                         "detail": message}, status_code=status, headers=headers or None)


def create_app(cfg: ServerConfig, *, health: Any = None) -> FastAPI:
    """The service. ``health``: a callable returning the doctor's report as a dict (default
    :func:`arbiter.sandbox.doctor.diagnose`, run once and kept)."""
    metrics = Metrics()
    pool = JudgePool(cfg.workers, cfg.queue, metrics)
    warm = WarmSandboxes(capacity=4 * cfg.workers)
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        pool.shutdown()
        warm.close()

    app = FastAPI(title="arbiter", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def guard(request: Request, call_next):
        if cfg.token and request.url.path not in OPEN_PATHS:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {cfg.token}".encode()):
                return _error(401, "missing or wrong API token (Authorization: Bearer ...)")
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > cfg.max_body_bytes:
            return _error(413, f"request body of {length} bytes; at most {cfg.max_body_bytes}")
        started = time.monotonic()
        try:
            response = await call_next(request)
        finally:
            metrics.observe(request.url.path, time.monotonic() - started)
        return response

    async def body(request: Request) -> Any:
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > cfg.max_body_bytes:
                raise BadRequest(f"413:request body over {cfg.max_body_bytes} bytes")
        try:
            return json.loads(data)
        except ValueError as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None

    def refuse(exc: Exception, overload_status: int = 503) -> JSONResponse:
        if isinstance(exc, Overloaded):
            metrics.refused += 1
            return _error(overload_status, str(exc), **{"Retry-After": str(exc.retry_after)})
        msg = str(exc)
        if msg.startswith("413:"):
            return _error(413, msg[4:])
        return _error(422, msg)

    @app.post("/run_code")
    async def run_code_route(request: Request):
        try:
            req = RunCodeRequest.model_validate(await body(request))
            answer = await pool.run(run_code, req, cfg, warm, disconnected=request.is_disconnected)
        except ValidationError as exc:
            return _error(422, f"bad /run_code request: {exc.errors(include_url=False)}")
        except (BadRequest, Overloaded) as exc:
            return refuse(exc, 504)  # verl's client retries 504 only
        except OurFailure as exc:
            metrics.sandbox_errors += 1
            return _error(504, f"arbiter's sandbox failed (retry): {exc}", **{"Retry-After": "1"})
        status = answer["status"]
        metrics.verdict(status, 1)
        if status == "SandboxError":  # an unsupported language: the official client raises
            return JSONResponse(answer, status_code=200)
        return answer

    async def batch_route(request: Request, parse, call, answer_key: str):
        try:
            parsed = parse(await body(request), cfg)
            calls = call(parsed)
            batch = native.Batch(pool, calls)
        except (BadRequest, Overloaded) as exc:
            return refuse(exc)
        if request.query_params.get("stream") in ("1", "true"):
            return StreamingResponse(batch.lines(answer_key, request.is_disconnected),
                                     media_type="application/x-ndjson")
        try:
            results = await batch.results(request.is_disconnected)
        except BaseException:
            batch.cancel()
            raise
        return {answer_key + "s": results}

    @app.post("/v1/judge")
    async def judge_route(request: Request):
        return await batch_route(request, native.parse_tasks,
                                 lambda tasks: [lambda t=t: native.judge_one(t, metrics) for t in tasks], "verdict")

    @app.post("/v1/score")
    async def score_route(request: Request):
        def calls(parsed):
            items, opts = parsed
            return [lambda it=it: native.score_one(it, opts, metrics) for it in items]

        return await batch_route(request, native.parse_score, calls, "result")

    @app.get("/healthz")
    async def healthz():
        if "health" not in state:
            state["health"] = await asyncio.to_thread(health or _diagnose)
        report = state["health"]
        return JSONResponse(report, status_code=200 if report.get("isolated") else 503)

    @app.get("/metrics")
    async def metrics_route():
        return PlainTextResponse(metrics.text(), media_type="text/plain; version=0.0.4")

    app.state.pool, app.state.metrics = pool, metrics
    return app


def _diagnose() -> dict[str, Any]:
    from dataclasses import asdict

    from arbiter.sandbox.doctor import diagnose

    return asdict(diagnose())
