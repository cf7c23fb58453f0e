"""``arbiter serve``: the judging service (FastAPI + uvicorn). See ``docs/serve.md``."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        host: str = typer.Option("127.0.0.1", "--host", help="address to bind; not loopback needs tokens"),
        port: int = typer.Option(8080, "--port", help="0: any free port (the start-up line says which)"),
        token: Optional[str] = typer.Option(None, "--token", envvar="ARBITER_TOKEN",
                                            help="one API token (tenant 'default'): 'Authorization: Bearer <token>'"),
        tokens: Optional[str] = typer.Option(None, "--tokens", envvar="ARBITER_TOKENS_FILE",
                                             help="token file: lines 'NAME TOKEN [judges=N] [queue=N] [weight=W] [metrics=all]'"),
        workers: int = typer.Option(0, "--workers", help="judge slots (0: one per core)"),
        queue: int = typer.Option(4096, "--queue", help="waiting units over all tenants before 503/504"),
        tenant_queue: int = typer.Option(1024, "--tenant-queue",
                                         help="waiting units per tenant before 429/504 (token file: queue=N)"),
        hold_seconds: float = typer.Option(0.0, "--hold-seconds",
                                           help="a /run_code request waits this long for its answer, then 504 "
                                                "(0: verl's client timeout less 5 s)"),
        max_body_mb: int = typer.Option(64, "--max-body-mb", help="largest request body, MiB (413 past it)"),
        body_budget_mb: int = typer.Option(192, "--body-budget-mb",
                                           help="request bodies over 1 MiB being read and parsed at once, MiB "
                                                "(3 x each body's size; a larger one waits)"),
        max_output_mb: int = typer.Option(64, "--max-output-mb",
                                          help="stdout kept per run and files per answer, MiB"),
        drain_seconds: float = typer.Option(120.0, "--drain-seconds", help="SIGTERM: wait this long for requests"),
        ray_address: Optional[str] = typer.Option(None, "--ray", help="serve on every node of this Ray cluster "
                                                  "(auto: the one this machine joined) with Ray Serve"),
    ) -> None:
        """Serve SandboxFusion's /run_code, /v1/judge, /v1/score, /healthz and /metrics.

        This runs untrusted code: one per node, behind tokens (docs/serve.md). Exit status 2
        for a non-loopback --host without a token, or a bad token file.
        """
        from arbiter.server import ServerConfig
        from arbiter.server.runner import serve_forever
        from arbiter.server.tenants import Tenant, Tenants, load, parse

        try:
            if tokens:
                tenants = load(tokens)
            elif os.environ.get("ARBITER_TOKENS"):
                tenants = parse(os.environ["ARBITER_TOKENS"], origin="ARBITER_TOKENS")
            elif token:
                tenants = Tenants.single(token, queue=tenant_queue)
            else:
                tenants = Tenants(anonymous=Tenant("anonymous", queue=tenant_queue))
            cfg = ServerConfig(host=host, port=port, tenants=tenants, workers=workers, queue=queue,
                               hold_seconds=hold_seconds, max_body_bytes=max_body_mb * 1024 * 1024,
                               body_budget_bytes=body_budget_mb * 1024 * 1024,
                               max_output_bytes=max_output_mb * 1024 * 1024, drain_seconds=drain_seconds)
        except (OSError, ValueError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        if ray_address:
            from arbiter.server.ray_serve import serve_on_ray

            sys.exit(serve_on_ray(cfg, ray_address))
        sys.exit(serve_forever(cfg))
