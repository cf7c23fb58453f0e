"""Run the service under uvicorn: a start-up line (where it listens, how many judges, which
tenants), and a drain on SIGTERM or SIGINT: new requests get 503 while the ones in flight finish
(up to ``drain_seconds``), then the server exits 0. See ``docs/serve.md``."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from arbiter.server.app import create_app
from arbiter.server.config import ServerConfig
from arbiter.server.slowclients import guarded


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):  # the drain below owns SIGTERM and SIGINT
        yield


def startup_line(cfg: ServerConfig, host: str, port: int) -> str:
    who = ", ".join(cfg.tenants.names()) if cfg.tenants.required else "no token (loopback only)"
    return (f"arbiter serve: listening on http://{host}:{port} with {cfg.workers} judges; tenants: {who}; "
            f"queue {cfg.queue} units")


async def _drain(server: _Server, svc, cfg: ServerConfig) -> None:
    if svc.draining:
        return
    svc.draining = True
    svc.gauges()
    print(f"arbiter serve: draining ({svc.in_flight} requests in flight, up to {cfg.drain_seconds:g} s)",
          file=sys.stderr, flush=True)
    deadline = time.monotonic() + cfg.drain_seconds
    while svc.in_flight and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    server.should_exit = True


async def _main(cfg: ServerConfig) -> int:
    app = create_app(cfg)
    svc = app.state.service
    server = _Server(uvicorn.Config(app, host=cfg.host, port=cfg.port, log_level="warning", access_log=False,
                                    timeout_graceful_shutdown=5, lifespan="on", http=guarded(AutoHTTPProtocol),
                                    ws="none"))  # (no WebSocket route: an Upgrade is answered as HTTP)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(_drain(server, svc, cfg)))
    task = asyncio.ensure_future(server.serve())
    while not server.started and not task.done():
        await asyncio.sleep(0.02)
    if server.started:
        host, port = server.servers[0].sockets[0].getsockname()[:2]
        print(startup_line(cfg, host, port), file=sys.stderr, flush=True)
    await task
    if server.started:
        print("arbiter serve: stopped", file=sys.stderr, flush=True)
    return 0 if server.started else 1


def serve_forever(cfg: ServerConfig) -> int:
    """Serve until drained; the exit status (0 after a drain, 1 when it could not start)."""
    return asyncio.run(_main(cfg))
