"""``arbiter serve --ray``: the same HTTP API on every node of a Ray cluster, with Ray Serve. Two
deployments, one replica per node each (``max_replicas_per_node=1``, ``num_cpus=0``): ``judge``,
the whole service with that node's judges (its Ray ``CPU``), and ``front``, the ingress, which
hands each request to a judge replica and sends it to another when that one's node is lost (then
504). ``/metrics`` is the sum over the nodes: each judge replica leaves its snapshot with one
named actor. See ``docs/serve.md``, "Beyond one node"."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from typing import Any

from arbiter.server.config import ServerConfig

APP = "arbiter"
METRICS_ACTOR = "arbiter-serve-metrics"
NAMESPACE = "arbiter"
#: A node's snapshot older than this (its replica is gone) no longer counts in ``/metrics``.
STALE_SECONDS = 15.0
PUSH_SECONDS = 2.0


class MetricsBoard:
    """The named actor: the last snapshot of each replica."""

    def __init__(self) -> None:
        self._snaps: dict[str, tuple[float, dict]] = {}

    def put(self, replica: str, snapshot: dict) -> None:
        self._snaps[replica] = (time.monotonic(), snapshot)

    def merged(self) -> tuple[int, dict]:
        now = time.monotonic()
        live = [s for t, s in self._snaps.values() if now - t <= STALE_SECONDS]
        from arbiter.server.metrics import merge

        return len(live), merge(live)


def _board(node: str | None = None):
    """The board actor (created on ``node`` if it does not exist: the head, by :func:`run`)."""
    import ray

    opts: dict[str, Any] = dict(name=METRICS_ACTOR, namespace=NAMESPACE, get_if_exists=True, lifetime="detached",
                                num_cpus=0)
    if node is not None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
    return ray.remote(MetricsBoard).options(**opts).remote()


def build_app(cfg: ServerConfig):
    """The replica's app (run on the replica's node): :func:`~arbiter.server.app.create_app` with
    this node's cores as judges and ``/metrics`` summed over the cluster."""
    import ray

    from arbiter.cluster.pool import node_cores
    from arbiter.server.app import create_app
    from arbiter.server.metrics import render

    node = ray.get_runtime_context().get_node_id()
    cfg = dataclasses.replace(cfg, workers=node_cores(node), node=node)
    me = f"{node}-{ray.get_runtime_context().get_actor_id()}"

    def cluster_text(svc) -> str:
        svc.gauges()
        try:
            board = _board()
            board.put.remote(me, svc.metrics.snapshot())
            nodes, values = ray.get(board.merged.remote(), timeout=30)
        except Exception:  # the board is gone (its node too): this node's own counters
            nodes, values = 1, svc.metrics.snapshot()
        values[("arbiter_nodes", "gauge", "arbiter_nodes", ())] = nodes
        return render(values)

    app = create_app(cfg, metrics_text=cluster_text)
    svc = app.state.service

    def push() -> None:
        while True:
            svc.gauges()
            try:
                _board().put.remote(me, svc.metrics.snapshot())
            except Exception:  # the board's node is gone; try again next time
                pass
            time.sleep(PUSH_SECONDS)

    threading.Thread(target=push, daemon=True, name="arbiter-metrics-push").start()
    return app


#: Tries of a request whose judge replica died (its node lost) before the front answers 504.
FRONT_TRIES = 3


async def call_asgi(app, scope: dict, body: bytes) -> tuple[int, list, bytes]:
    """``app``'s answer to one request: ``(status, headers, body)``."""
    import asyncio

    sent = False
    start: dict = {}
    chunks: list[bytes] = []

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the front's client is there until the answer is made

    async def send(message):
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(dict(scope, type="http", asgi={"version": "3.0"}), receive, send)
    return start.get("status", 500), [list(h) for h in start.get("headers", [])], b"".join(chunks)


class Judge:
    """A node's service (its app run in process for each request the front hands it)."""

    def __init__(self, cfg: ServerConfig):
        self.app = build_app(cfg)

    async def handle(self, scope: dict, body: bytes) -> tuple[int, list, bytes]:
        return await call_asgi(self.app, scope, body)


def front_app(judge) -> Any:
    """The ingress: an ASGI app that reads the request, has a judge replica answer it, and tries
    another replica when that one died (its node lost); 504 + ``Retry-After`` after
    :data:`FRONT_TRIES`."""
    import asyncio

    from ray.exceptions import RayActorError

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        keep = {k: scope.get(k) for k in ("method", "path", "raw_path", "query_string", "headers", "http_version",
                                          "scheme", "client", "server", "root_path")}
        keep["root_path"] = ""
        for attempt in range(FRONT_TRIES):
            try:
                status, headers, data = await judge.handle.remote(keep, bytes(body))
                break
            except RayActorError as exc:  # ActorDiedError, ActorUnavailableError: the node is gone
                last = exc
                await asyncio.sleep(0.5 * 2 ** attempt)
        else:
            status, headers = 504, [[b"content-type", b"application/json"], [b"retry-after", b"1"]]
            data = json.dumps({"status": "SandboxError", "message": f"the judging node was lost (retry): {last}"
                               [:2000]}).encode()
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return app


def deployment(cfg: ServerConfig, replicas: int) -> Any:
    """The Serve application: ``front`` and ``judge``, ``replicas`` of each, at most one per node."""
    from ray import serve

    common = dict(num_replicas=replicas, max_replicas_per_node=1, max_ongoing_requests=100_000,
                  ray_actor_options={"num_cpus": 0}, health_check_period_s=2, health_check_timeout_s=10,
                  graceful_shutdown_timeout_s=cfg.drain_seconds)
    judge = serve.deployment(Judge, name="judge", **common).bind(cfg)

    class Front:
        def __init__(self, judge):
            self.judge = judge

        def __serve_build_asgi_app__(self):
            return front_app(self.judge)

    front = serve.deployment(serve.ingress()(Front), name="front", **common)
    return front.bind(judge)


def run(cfg: ServerConfig, *, location: str = "EveryNode", replicas: int | None = None) -> str:
    """Deploy on the connected Ray cluster (one replica per live node unless ``replicas``); the
    proxies listen on ``cfg.host:cfg.port`` (``location``: ``EveryNode`` or ``HeadOnly``).
    Returns the start-up line."""
    import ray
    from ray import serve

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    count = replicas or len(nodes)
    _board(ray.get_runtime_context().get_node_id())
    serve.start(proxy_location=location, http_options={"host": cfg.host, "port": cfg.port})
    serve.run(deployment(cfg, count), name=APP, route_prefix="/")
    who = ", ".join(cfg.tenants.names()) if cfg.tenants.required else "no token (loopback only)"
    return (f"arbiter serve: Ray Serve on {len(nodes)} nodes ({count} replicas, one per node, each with its node's "
            f"cores as judges), listening on http://{cfg.host}:{cfg.port}; tenants: {who}")


def serve_on_ray(cfg: ServerConfig, address: str) -> int:
    """``arbiter serve --ray ADDRESS``: deploy, print the start-up line, and keep the application
    until SIGTERM or SIGINT (then it is deleted: each replica drains as one server does)."""
    import signal
    import sys

    import ray
    from ray import serve

    ray.init(address=address, namespace=NAMESPACE, log_to_driver=False)
    print(run(cfg), file=sys.stderr, flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    serve.delete(APP)
    return 0
