"""``arbiter serve``: the judging service (FastAPI + uvicorn). See ``docs/serve.md``."""

from __future__ import annotations

import signal
from typing import Any, Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        host: str = typer.Option("127.0.0.1", "--host", help="address to bind; not loopback needs --token"),
        port: int = typer.Option(8080, "--port"),
        token: Optional[str] = typer.Option(None, "--token", envvar="ARBITER_TOKEN",
                                            help="API token clients send as 'Authorization: Bearer <token>'"),
        workers: int = typer.Option(0, "--workers", help="judges at once (0: one per core)"),
        queue: int = typer.Option(256, "--queue", help="waiting units before 503/504 + Retry-After"),
        max_body_mb: int = typer.Option(64, "--max-body-mb", help="largest request body, MiB (413 past it)"),
        max_output_mb: int = typer.Option(64, "--max-output-mb", help="stdout kept per run, MiB (past it: output limit)"),
        drain_seconds: float = typer.Option(120.0, "--drain-seconds", help="SIGTERM: wait this long for requests"),
    ) -> None:
        """Serve SandboxFusion's /run_code, /v1/judge, /v1/score, /healthz and /metrics.

        This runs untrusted code: one per node, behind the token (docs/serve.md). Exit status 2
        for a non-loopback --host without a token.
        """
        import uvicorn

        from arbiter.server import ServerConfig, create_app

        try:
            cfg = ServerConfig(host=host, port=port, token=token or None, workers=workers, queue=queue,
                               max_body_bytes=max_body_mb * 1024 * 1024,
                               max_output_bytes=max_output_mb * 1024 * 1024, drain_seconds=drain_seconds)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        # uvicorn drains on SIGTERM/SIGINT, then re-raises the signal to the handler found at start:
        # a no-op one here, so a drained server exits 0.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: None)
        config = uvicorn.Config(create_app(cfg), host=cfg.host, port=cfg.port, log_level="warning",
                                timeout_graceful_shutdown=int(cfg.drain_seconds), access_log=False)
        _Announcing(config, cfg).run()


def _say(text: str) -> None:
    import sys

    print(f"arbiter serve: {text}", file=sys.stderr, flush=True)


def _announcing_server() -> type:
    import uvicorn

    class Announcing(uvicorn.Server):
        """uvicorn's server, saying when it listens (address, judges, queue, token) and when it stops."""

        def __init__(self, config: Any, cfg: Any):
            super().__init__(config)
            self.cfg = cfg

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                cfg = self.cfg
                bound = [s.getsockname() for srv in getattr(self, "servers", []) for s in srv.sockets or []]
                where = ", ".join(f"http://{a[0]}:{a[1]}" for a in bound) or f"http://{cfg.host}:{cfg.port}"
                _say(f"listening on {where}, {cfg.workers} judges, queue {cfg.queue}, "
                     f"{'token required' if cfg.token else 'no token (loopback only)'}")

        async def shutdown(self, sockets: Any = None) -> None:
            _say(f"stopping: no new requests; draining those in flight (up to {self.cfg.drain_seconds:g} s)")
            await super().shutdown(sockets)
            _say("stopped")

    return Announcing


def _Announcing(config: Any, cfg: Any) -> Any:  # noqa: N802 - the class is built when uvicorn is imported
    return _announcing_server()(config, cfg)
