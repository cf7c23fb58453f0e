"""What every request passes before a route: its tenant from ``Authorization: Bearer TOKEN`` (or a
``/t/TOKEN/`` path prefix, for clients that send no header: verl's sandbox_fusion), 401 without
one; 503 while draining; 413 past the body cap; the request counted in flight and timed. A plain
ASGI middleware, so that the routes still see the client's disconnect. See ``docs/serve.md``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from fastapi import FastAPI

if TYPE_CHECKING:
    from arbiter.server.app import Service

#: Paths that answer during a drain and without a token.
OPEN_PATHS = ("/healthz", "/v1/ping")
#: Paths that answer during a drain (with a token).
DRAIN_PATHS = OPEN_PATHS + ("/metrics",)
ROUTES = ("/run_code", "/run_jupyter", "/v1/judge", "/v1/score", "/healthz", "/metrics", "/v1/ping")


def _token_path(scope) -> tuple[bytes | None, dict]:
    """``/t/TOKEN/rest`` -> (``Bearer TOKEN``, the scope with path ``/rest``)."""
    path = scope["path"]
    if not path.startswith("/t/"):
        return None, scope
    token, _, rest = path[3:].partition("/")
    return f"Bearer {token}".encode("latin-1", "replace"), dict(scope, path="/" + rest, raw_path=("/" + rest).encode())


def install(app: FastAPI, svc: "Service") -> None:
    from arbiter.server.app import error

    cfg = svc.cfg

    class Guard:
        def __init__(self, inner):
            self.inner = inner

        async def __call__(self, scope, receive, send):
            if scope["type"] != "http":
                return await self.inner(scope, receive, send)
            in_path, scope = _token_path(scope)
            headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
            path = scope["path"]
            tenant = cfg.tenants.find(in_path or headers.get("authorization", b""))
            refused = None
            if tenant is None and path not in OPEN_PATHS:
                refused = error(401, "missing or wrong API token (Authorization: Bearer ..., or a /t/TOKEN/ prefix)")
            elif svc.draining and path not in DRAIN_PATHS:
                refused = error(503, "the server is draining (SIGTERM): retry on another node or later",
                                **{"Retry-After": "2", "Connection": "close"})
                svc.metrics.refused(tenant.name if tenant else "", "draining", 503)
            length = headers.get("content-length", b"")
            if refused is None and length.isdigit() and int(length) > cfg.max_body_bytes:
                refused = error(413, f"request body of {int(length)} bytes; at most {cfg.max_body_bytes}")
            if refused is not None:
                return await refused(scope, receive, send)
            scope["arbiter.tenant"] = tenant or cfg.tenants.anonymous
            started = time.monotonic()
            svc.in_flight += 1
            try:
                await self.inner(scope, receive, send)
            finally:
                svc.in_flight -= 1
                if scope.get("arbiter.body_cost"):
                    await svc.bodies.release(scope["arbiter.body_cost"])
                svc.metrics.observe("arbiter_request_seconds", time.monotonic() - started,
                                    route=path if path in ROUTES else "other")

    app.add_middleware(Guard)
