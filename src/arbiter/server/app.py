"""The FastAPI application: tenants (tokens), size caps, drain, the routes over the fair queue of
judge slots. See ``docs/serve.md``."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from pydantic import ValidationError
from starlette.routing import Route

from arbiter.judge.step import StepJudge
from arbiter.server import answer, native
from arbiter.server.admission import FairQueue, Refused, Tenant
from arbiter.server.budget import LARGE_BODY, ByteBudget
from arbiter.server.config import ANSWER_MARGIN, VERL_API_SLACK, ServerConfig
from arbiter.server.jupyter import RunJupyterRequest, run_jupyter
from arbiter.server.metrics import Metrics, visible_to
from arbiter.server.retries import Orphans, request_key
from arbiter.server.runcode import BadRequest, OurFailure, RunCodeRequest, prepare, run_code, warm_sandboxes
from arbiter.server.slowclients import body_seconds, read_within

log = logging.getLogger("arbiter.serve")


class Expired(Exception):
    """A ``/run_code`` request waited ``hold_seconds`` without a judge (504: its client retries)."""


@dataclass
class Service:
    """What the routes share: settings, counters, the fair queue, the drain state."""

    cfg: ServerConfig
    health: Callable[[], dict[str, Any]]
    metrics: Metrics = field(default_factory=Metrics)
    health_report: dict[str, Any] | None = None
    draining: bool = False
    in_flight: int = 0
    _logged: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.queue = FairQueue(self.cfg.workers, queue=self.cfg.queue, on_start=self._started, on_done=self._done)
        self.warm = warm_sandboxes(self.cfg)
        self.bodies = ByteBudget(self.cfg.body_budget_bytes)
        self.orphans = Orphans(self.cfg.retry_window, self.queue.cancel)
        self._judges: dict[str, StepJudge] = {}
        self._judges_lock = threading.Lock()
        self.metrics.set("arbiter_judges", self.cfg.workers)
        for name in ("arbiter_cases_total", "arbiter_sandbox_errors_total", "arbiter_cancelled_total"):
            self.metrics.add(name, 0)
        self.gauges()

    def judges(self, tenant: str) -> StepJudge:
        """``tenant``'s step judge: its requests share verdicts and case-order memory, never with
        another tenant's; it judges in the fair queue's slot thread (the bound of ``--workers``)."""
        with self._judges_lock:
            judges = self._judges.get(tenant)
            if judges is None:
                judges = self._judges[tenant] = StepJudge(self.cfg.workers, inline=True)
            return judges

    def _started(self, tenant: str, waited: float) -> None:
        self.metrics.observe("arbiter_tenant_wait_seconds", waited, tenant=tenant)

    def _done(self, tenant: str, seconds: float) -> None:
        self.metrics.add("arbiter_tenant_judge_seconds_total", seconds, tenant=tenant)

    def gauges(self) -> None:
        """The gauges set from the queue's state now (before every read of the metrics)."""
        busy = 0
        for name, (waiting, running) in self.queue.snapshot().items():
            self.metrics.set("arbiter_tenant_queue_depth", waiting, tenant=name)
            self.metrics.set("arbiter_tenant_judges_busy", running, tenant=name)
            busy += running
        self.metrics.set("arbiter_queue_depth", self.queue.waiting)
        self.metrics.set("arbiter_judges_busy", busy)
        self.metrics.set("arbiter_draining", int(self.draining))
        self.metrics.set("arbiter_body_budget_bytes", self.bodies.total)
        self.metrics.set("arbiter_body_bytes_held", self.bodies.held)
        self.metrics.set("arbiter_body_bytes_held_max", self.bodies.peak)
        self.metrics.set("arbiter_body_waits", self.bodies.waited)

    async def read(self, request: Request) -> bytes:
        """The body, read up to ``max_body_bytes`` (:class:`BadRequest` ``413:`` past it) within
        :func:`.slowclients.body_seconds` of its size (``408:`` after). A body over
        :data:`LARGE_BODY` first waits for its share of the body budget, held until the request
        ends (:mod:`.budget`); one sent without a length takes the share of the largest body once
        it passes :data:`LARGE_BODY`."""
        length = request.headers.get("content-length", "")
        declared = int(length) if length.isdigit() else None
        if declared is not None and declared > LARGE_BODY:
            await self._charge(request, declared)
        data = bytearray()

        async def take(chunk: bytes) -> None:
            data.extend(chunk)
            if len(data) > self.cfg.max_body_bytes:
                raise BadRequest(f"413:request body over {self.cfg.max_body_bytes} bytes")
            if declared is None and len(data) > LARGE_BODY and "arbiter.body_cost" not in request.scope:
                await self._charge(request, self.cfg.max_body_bytes)

        seconds = body_seconds(min(declared or self.cfg.max_body_bytes, self.cfg.max_body_bytes))
        try:
            await read_within(request.stream(), seconds, take)
        except TimeoutError:
            raise BadRequest(f"408:the request body did not arrive within {seconds:g} s") from None
        return data  # type: ignore[return-value]

    async def _charge(self, request: Request, body_bytes: int) -> None:
        cost = self.bodies.share(body_bytes)
        await self.bodies.acquire(cost)
        request.scope["arbiter.body_cost"] = cost

    async def body(self, request: Request) -> Any:
        """The JSON body (:class:`BadRequest` for what is not JSON)."""
        return self.parse(await self.read(request))

    @staticmethod
    def parse(data: bytes | bytearray) -> Any:
        """The JSON of a body; a ``bytearray`` is emptied once decoded (one copy less held)."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadRequest(f"the body is not UTF-8 JSON: {exc}") from None
        if isinstance(data, bytearray):
            data.clear()
        try:
            return json.loads(text)
        except RecursionError:
            raise BadRequest("the body is not JSON this service takes: nested too deeply") from None
        except ValueError as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None

    def refuse(self, tenant: str, status: int, reason: str, message: str, retry_after: int) -> JSONResponse:
        """A load refusal (429/503/504 + ``Retry-After``), counted and logged (once per 10 s a reason)."""
        self.metrics.refused(tenant, reason, status)
        now = time.monotonic()
        if now - self._logged.get(reason, -1e9) > 10:
            self._logged[reason] = now
            log.warning("arbiter serve: refused a request of tenant %s with %d (%s): %s", tenant, status, reason,
                        message)
        return error(status, message, **{"Retry-After": str(retry_after)})


def error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"status": "SandboxError" if status >= 500 else "Refused", "message": message},
                        status_code=status, headers=headers or None)


def bad_request(exc: Exception) -> JSONResponse:
    msg = str(exc)
    status = int(msg[:3]) if msg[:3] in ("408", "413") and msg[3:4] == ":" else 422
    return error(status, msg[4:] if status != 422 else msg)


def create_app(cfg: ServerConfig, *, health: Callable[[], dict[str, Any]] | None = None,
               metrics_text: Callable[[Service], str] | None = None) -> FastAPI:
    """The service. ``health``: returns the doctor's report as a dict (default
    :func:`arbiter.sandbox.doctor.diagnose`, run once and kept); ``metrics_text``: what
    ``/metrics`` answers (default this process's counters; on Ray, the cluster's sum)."""
    svc = Service(cfg, health or _diagnose)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        await asyncio.to_thread(svc.queue.close)
        svc.warm.close()

    app = FastAPI(title="arbiter", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    from arbiter.server.guard import install

    install(app, svc)
    _run_code_route(app, svc)
    _jupyter_route(app, svc)
    _batch_routes(app, svc)
    _info_routes(app, svc, metrics_text)
    app.state.service = svc
    return app


def tenant_of(request: Request) -> Tenant:
    return request.scope["arbiter.tenant"]


async def disconnected(request: Request) -> None:
    """Returns once the client has gone (the body is read first: nothing else is waited for)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def hold(svc: Service, fut, request: Request, key: str, deadline: float) -> Any:
    """Await a ``/run_code`` unit until ``deadline`` (monotonic), with no polling: cancelled when
    its client leaves; :class:`Expired` when it is not done by then (queued or running, it keeps
    its place for the client's retry: :mod:`.retries`)."""
    afut, gone = asyncio.wrap_future(fut), asyncio.ensure_future(disconnected(request))
    try:
        done, _ = await asyncio.wait({afut, gone}, timeout=max(0.0, deadline - time.monotonic()),
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if afut in done:
        return afut.result()
    if gone in done:
        if svc.queue.cancel(fut):
            svc.metrics.add("arbiter_cancelled_total")
        raise asyncio.CancelledError("client disconnected")
    svc.orphans.leave(key, fut)
    raise Expired("not answered within the client's timeout (the server is saturated); retry: "
                  "the same request takes over this one's place")


def answer_within(req: RunCodeRequest, cfg: ServerConfig) -> float:
    """Seconds a ``/run_code`` request has for its answer: ``hold_seconds`` when set, else verl's
    client timeout (``compile_timeout + run_timeout + 10``) less :data:`ANSWER_MARGIN`."""
    if cfg.hold_seconds > 0:
        return cfg.hold_seconds
    return max(1.0, min(req.compile_timeout, cfg.max_seconds) + min(req.run_timeout, cfg.max_seconds)
               + VERL_API_SLACK - ANSWER_MARGIN)


def _run_code_route(app: FastAPI, svc: Service) -> None:
    async def run_code_asgi(scope, receive, send) -> None:
        """SandboxFusion's endpoint, a plain ASGI route: FastAPI's per-request work (dependencies,
        its response wrapping) was a sizeable part of a warm ``/run_code`` (docs/serve.md)."""
        response = await run_code_answer(svc, Request(scope, receive))
        await response(scope, receive, send)

    app.router.routes.append(Route("/run_code", _Asgi(run_code_asgi), methods=["POST"]))


class _Asgi:
    """An ASGI callable that Starlette's ``Route`` calls as it is (a function would be wrapped
    as ``endpoint(request) -> response``)."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn

    async def __call__(self, scope, receive, send) -> None:
        await self.fn(scope, receive, send)


async def run_code_answer(svc: Service, request: Request) -> Response:
    """``POST /run_code``'s answer; overload and our own failures are 504 (verl retries 504 only)."""
    tenant, arrived = tenant_of(request), time.monotonic()
    try:
        raw = await svc.read(request)
        key = request_key(tenant.name, raw)
        req = RunCodeRequest.model_validate(svc.parse(raw))
        raw = b""  # the body's copies go as soon as the request is checked
        within = answer_within(req, svc.cfg)
        fut = svc.orphans.adopt(key)
        if fut is None:
            p = prepare(req, svc.cfg)
            unit = lambda slot: run_code(p, svc.cfg, svc.warm, tenant.name, svc.metrics.cases_run)  # noqa: E731
            fut = svc.queue.submit(tenant, p.key, [unit])[0]
        else:
            svc.metrics.add("arbiter_run_code_adopted_total", tenant=tenant.name)
        del req
        spooled = await hold(svc, fut, request, key, arrived + within)
    except ValidationError as exc:
        return error(422, f"bad /run_code request: {exc.errors(include_url=False)}"[:4000])
    except BadRequest as exc:
        return bad_request(exc)
    except Refused as exc:
        return svc.refuse(tenant.name, 504, exc.reason, str(exc), exc.retry_after)
    except Expired as exc:
        return svc.refuse(tenant.name, 504, "held_too_long", str(exc), 1)
    except OurFailure as exc:
        svc.metrics.add("arbiter_sandbox_errors_total")
        return error(504, f"arbiter's sandbox failed (retry): {exc}", **{"Retry-After": "1"})
    svc.metrics.run_code(tenant.name, _peek_status(spooled))
    return spooled_response(spooled)


def spooled_response(spooled) -> Response:
    """A spooled answer: in one piece when it is at most one chunk (most answers), else streamed
    from its file a chunk at a time."""
    size = answer.size(spooled)
    if size <= answer.CHUNK:
        with spooled:
            return Response(spooled.read(), media_type="application/json")
    return StreamingResponse(answer.stream(spooled), media_type="application/json",
                             headers={"Content-Length": str(size)})


def _jupyter_route(app: FastAPI, svc: Service) -> None:
    @app.post("/run_jupyter")
    async def run_jupyter_route(request: Request):
        """SandboxFusion's notebook endpoint (cells in one Python process: :mod:`.jupyter`)."""
        tenant = tenant_of(request)
        try:
            req = RunJupyterRequest.model_validate(await svc.body(request))
            mark = "@@arbiter-cells-" + secrets.token_hex(16)
            fut = svc.queue.submit(tenant, mark, [lambda slot: run_jupyter(req, svc.cfg, mark)])[0]
            spooled = await native.watch(fut, request.is_disconnected)
        except ValidationError as exc:
            return error(422, f"bad /run_jupyter request: {exc.errors(include_url=False)}"[:4000])
        except BadRequest as exc:
            return bad_request(exc)
        except Refused as exc:
            return svc.refuse(tenant.name, exc.status, exc.reason, str(exc), exc.retry_after)
        except OurFailure as exc:
            svc.metrics.add("arbiter_sandbox_errors_total")
            return error(504, f"arbiter's sandbox failed (retry): {exc}", **{"Retry-After": "1"})
        svc.metrics.add("arbiter_run_jupyter_total", tenant=tenant.name, status=_peek_status(spooled))
        return spooled_response(spooled)


def _peek_status(spooled) -> str:
    head = spooled.read(64).decode("ascii", "replace")
    spooled.seek(0)
    return head.split('"status": "', 1)[-1].split('"', 1)[0]


def _batch_routes(app: FastAPI, svc: Service) -> None:
    async def batch(request: Request, parse, units, key: str):
        """``units(parsed, tenant)`` gives the request's calls, or the calls and the order to start them."""
        tenant = tenant_of(request)
        try:
            parsed = parse(await svc.body(request), svc.cfg)
            made = await asyncio.to_thread(units, parsed, tenant.name)
            calls, order = made if isinstance(made, tuple) else (made, None)
            b = native.Batch(svc.queue, tenant, calls, svc.metrics, order)
        except BadRequest as exc:
            return bad_request(exc)
        except Refused as exc:
            return svc.refuse(tenant.name, exc.status, exc.reason, str(exc), exc.retry_after)
        if request.query_params.get("stream") in ("1", "true"):
            return StreamingResponse(b.lines(key, request.is_disconnected), media_type="application/x-ndjson")
        return {key + "s": await b.results(request.is_disconnected)}

    @app.post("/v1/judge")
    async def judge_route(request: Request):
        """``{"tasks": [Task JSON]}`` -> ``{"verdicts": [Verdict JSON]}`` (docs/codec.md)."""
        return await batch(request, native.parse_tasks, lambda tasks, who: [
            lambda slot, t=t: native.judge_one(t, svc.metrics, who, svc.judges(who)) for t in tasks], "verdict")

    @app.post("/v1/score")
    async def score_route(request: Request):
        """``{"items": [verl item], "options": {...}}`` -> ``{"results": [compute_score result]}``."""
        return await batch(request, native.parse_score,
                           lambda parsed, who: native.score_units(*parsed, svc.metrics, who, svc.judges(who),
                                                                   svc.cfg.max_tests), "result")


def _info_routes(app: FastAPI, svc: Service, metrics_text: Callable[[Service], str] | None) -> None:
    @app.get("/healthz")
    async def healthz():
        """The doctor's answer: 200 when this node can isolate (and is not draining), else 503."""
        if svc.health_report is None:
            svc.health_report = await asyncio.to_thread(svc.health)
        ok = svc.health_report.get("isolated") and not svc.draining
        return JSONResponse(dict(svc.health_report, draining=svc.draining), status_code=200 if ok else 503)

    @app.get("/v1/ping")
    async def ping():
        """SandboxFusion's health check."""
        return "pong"

    @app.get("/metrics")
    async def metrics_route(request: Request):
        """Prometheus text: every tenant's series for an operator (``metrics=all``), else the caller's own."""
        if metrics_text is not None:
            text = await asyncio.to_thread(metrics_text, svc)
        else:
            svc.gauges()
            text = svc.metrics.text()
        tenant = tenant_of(request)
        if not svc.cfg.tenants.sees_all_metrics(tenant):
            text = visible_to(text, tenant.name)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")


def _diagnose() -> dict[str, Any]:
    from dataclasses import asdict

    from arbiter.sandbox.doctor import diagnose

    return asdict(diagnose())
