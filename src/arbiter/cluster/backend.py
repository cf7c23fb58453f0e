"""The Ray backend of the batch jobs: items go to the per-node judge pools, results come back as
``concurrent.futures.Future`` s, so :func:`arbiter.pipelines.executor.ordered_map` keeps its order,
its bound on work in flight and its incremental writes unchanged.

At start every live node gets its pool (:func:`arbiter.cluster.pool.pool_on`); a node whose
sandbox cannot isolate code (``arbiter doctor``) is refused naming it, and with
``pin_toolchain`` a cluster whose nodes' C++ toolchain fingerprints differ is refused. An item
whose pool dies (actor or node) is re-run on another pool; :attr:`RayBackend.retries` counts
those. See ``docs/cluster.md`` ("Faults").
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from arbiter.cluster.pool import NAMESPACE, node_cores, pool_on

#: Times one item is re-run after its pool died before the run stops with the error.
MAX_ITEM_RETRIES = 3
#: Tries to start (or join) Ray, and the first wait between two (doubled each time): a loaded node's raylet
#: can miss Ray's own 30 s start-up window once and make it the next time.
START_TRIES, START_WAIT = 3, 2.0

#: What a failed connection to a token-authenticated cluster needs (docs/cluster.md, "Quick start").
TOKEN_HINT = ("Ray >= 2.60's `ray start --head` turns on token authentication: run with RAY_AUTH_MODE=token and "
              "the cluster's token (the head's ~/.ray/auth_token copied to this machine, or RAY_AUTH_TOKEN), as "
              "every `ray start --address` on a worker node needs too")


def connect_failure(exc: BaseException) -> str:
    """Ray's "Failed to connect to Ray cluster at ..." with what caused it (Ray keeps the cause in
    the exception chain and prints none of it) and, unless this process already authenticates
    with a token, the token-authentication hint."""
    import os

    parts, seen, cause = [str(exc)], {str(exc)}, exc.__cause__ or exc.__context__
    while cause is not None and len(parts) < 4:
        text = _without_traceback(f"{type(cause).__name__}: {cause}".strip())
        if str(cause) not in seen:
            parts.append(text)
            seen.add(str(cause))
        cause = cause.__cause__ or cause.__context__
    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        parts.append(TOKEN_HINT)
    return "; ".join(p.rstrip(".") for p in parts)


def _without_traceback(text: str) -> str:
    """``text`` with a traceback Ray pasted into it ("Last connection error: Traceback ...") cut
    down to the exception it ends with (its unindented lines)."""
    head, marker, trace = text.partition("Traceback (most recent call last):")
    if not marker:
        return text
    raised = [line.strip() for line in trace.splitlines() if line.strip() and not line[:1].isspace()]
    return " ".join([head.strip(), *raised])


class ClusterRefused(RuntimeError):
    """A node cannot run the job (no isolation, another toolchain, no live node); names the node."""


class ClusterUnavailable(RuntimeError):
    """Ray did not start (or could not be joined) in :data:`START_TRIES` tries; the message is one line."""


def _start_ray(ray: Any, address: str | None, **options: Any) -> None:
    """``ray.init``, tried :data:`START_TRIES` times (Ray shut down between tries); raises
    :class:`ClusterUnavailable` with Ray's last error in one line. A ``ConnectionError`` (no cluster at the
    address given) is not retried: it is the address that is wrong."""
    for attempt in range(START_TRIES):
        try:
            ray.init(address=address, **options)
            return
        except ConnectionError:
            raise
        except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception for "timed out during startup"
            with contextlib.suppress(Exception):
                ray.shutdown()
            if attempt + 1 == START_TRIES:
                where = f" at {address}" if address else ""
                first = (str(exc).strip().splitlines() or [""])[0]
                raise ClusterUnavailable(f"Ray did not start{where} in {START_TRIES} tries: "
                                         f"{type(exc).__name__}: {first}") from exc
            time.sleep(START_WAIT * 2 ** attempt)


def _node_label(node: dict[str, Any]) -> str:
    return f"{node.get('NodeManagerAddress', '?')} ({node['NodeID'][:12]})"


def _new_lock(_: Any) -> Any:
    return threading.Lock()


def _new_rlock(_: Any) -> Any:
    return threading.RLock()


def _register_lock_serializers(ray: Any) -> None:
    """A lock in a job's shared context (its caches' guards) arrives on a node as a new, free lock:
    it guards that node's copy of the context, as the original guards the driver's."""
    ray.util.register_serializer(type(threading.Lock()), serializer=lambda lock: None, deserializer=_new_lock)
    ray.util.register_serializer(type(threading.RLock()), serializer=lambda lock: None, deserializer=_new_rlock)


class _Pool:
    def __init__(self, node: dict[str, Any], handle: Any, cores: int):
        self.node, self.handle, self.cores = node, handle, cores
        self.in_flight = 0
        self.alive = True


class RayBackend:
    """``submit(fn, arg)`` runs ``fn(arg)`` in the least-loaded node pool (``fn`` pickled once
    per function object). ``workers``: the cluster's judge slots (the sum of the pools' cores).

    - ``address``: ``None`` starts a local Ray (or joins ``RAY_ADDRESS``), ``"auto"`` joins the
      running cluster, else ``host:port``; when Ray is already initialised it is used as is;
    - ``check_isolation``: refuse a node whose doctor says it cannot isolate (default on);
    - ``pin_toolchain``: refuse a cluster whose nodes' ``g++`` fingerprints differ (PIE/oracle
      measurements compare counts of one toolchain only).
    Raises :class:`ClusterRefused`, :class:`ClusterUnavailable` (Ray did not start in :data:`START_TRIES`
    tries)."""

    def __init__(self, address: str | None = None, *, check_isolation: bool = True, pin_toolchain: bool = False):
        import ray

        self._ray = ray
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            try:
                _start_ray(ray, address, namespace=NAMESPACE, include_dashboard=False, log_to_driver=False,
                           configure_logging=False)
            except ConnectionError as exc:
                raise ConnectionError(connect_failure(exc)) from exc
        self._lock = threading.Lock()
        self._fns: dict[int, tuple[Callable, Any]] = {}
        _register_lock_serializers(ray)
        self.retries = 0
        self.pools = self._start_pools()
        if check_isolation:
            self._check_isolation()
        self.toolchain = self._check_toolchain() if pin_toolchain else None
        self.workers = sum(p.cores for p in self.pools)

    def _start_pools(self) -> list[_Pool]:
        nodes = [n for n in self._ray.nodes() if n.get("Alive")]
        if not nodes:
            raise ClusterRefused("the Ray cluster has no live node")
        pools = []
        for node in nodes:
            cores = node_cores(node["NodeID"])
            pools.append(_Pool(node, pool_on(node["NodeID"], cores=cores), cores))
        self._ray.get([p.handle.stats.remote() for p in pools])  # every pool is up before work starts
        return pools

    def _check_isolation(self) -> None:
        reports = self._ray.get([p.handle.doctor.remote() for p in self.pools])
        for pool, rep in zip(self.pools, reports):
            if not rep["isolated"]:
                why = "; ".join(rep["failed"]) or "the sandbox did not start"
                raise ClusterRefused(f"node {_node_label(pool.node)} cannot isolate untrusted code (arbiter doctor: "
                                     f"{why}); fix it or remove it from the cluster")

    def _check_toolchain(self) -> dict[str, Any] | None:
        from arbiter.languages.cpp.toolchain import ToolchainMismatch, assert_comparable

        found = self._ray.get([p.handle.toolchain.remote() for p in self.pools])
        first = found[0]
        for pool, tc in zip(self.pools[1:], found[1:]):
            try:
                if (tc is None) != (first is None):
                    raise ToolchainMismatch("g++ missing on one node", {"g++": (first is not None, tc is not None)})
                if tc is not None:
                    assert_comparable(first, tc)
            except ToolchainMismatch as exc:
                raise ClusterRefused(f"node {_node_label(pool.node)} has another C++ toolchain than node "
                                     f"{_node_label(self.pools[0].node)} ({exc}); measurements would compare counts "
                                     f"of different toolchains: run on nodes with one toolchain") from None
        return first

    def _fn_ref(self, fn: Callable) -> Any:
        with self._lock:
            hit = self._fns.get(id(fn))
            if hit is None or hit[0] is not fn:
                hit = (fn, self._ray.put(fn))
                self._fns[id(fn)] = hit
            return hit[1]

    def _pick(self) -> _Pool:
        with self._lock:
            live = [p for p in self.pools if p.alive]
            if not live:
                raise ClusterRefused("every judge pool of the cluster died")
            pool = min(live, key=lambda p: p.in_flight / p.cores)
            pool.in_flight += 1
            return pool

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Future:
        out: Future = Future()
        self._send(self._fn_ref(fn), arg, out, 0)
        return out

    def _send(self, fn_ref: Any, arg: Any, out: Future, tries: int) -> None:
        try:
            pool = self._pick()
        except ClusterRefused as exc:
            out.set_exception(exc)
            return
        ref = pool.handle.run.remote([fn_ref], arg)  # boxed: the pool fetches the function once
        ref.future().add_done_callback(lambda f: self._settle(f, pool, fn_ref, arg, out, tries))

    def _settle(self, done: Future, pool: _Pool, fn_ref: Any, arg: Any, out: Future, tries: int) -> None:
        from ray import exceptions as rex

        with self._lock:
            pool.in_flight -= 1
        if out.cancelled():
            return
        exc = done.exception()
        if exc is None:
            out.set_result(done.result())
        elif isinstance(exc, rex.RayTaskError):
            out.set_exception(getattr(exc, "cause", None) or exc)
        elif isinstance(exc, (rex.RayActorError, rex.ActorUnavailableError, rex.ObjectLostError,
                              rex.WorkerCrashedError, rex.NodeDiedError)) and tries < MAX_ITEM_RETRIES:
            with self._lock:
                pool.alive = False
                self.retries += 1
            self._send(fn_ref, arg, out, tries + 1)
        else:
            out.set_exception(exc)

    def nodes(self) -> list[dict[str, Any]]:
        """One ``{"node", "cores", "alive"}`` per pool (for the run's summary)."""
        return [{"node": _node_label(p.node), "cores": p.cores, "alive": p.alive} for p in self.pools]

    def close(self, cancel: bool = False) -> None:
        """Forget the pools (they stay up for the next run on a cluster that was joined); shut
        down a Ray this backend started."""
        self._fns.clear()
        if self._owns_ray:
            self._ray.shutdown()


__all__ = ["ClusterRefused", "MAX_ITEM_RETRIES", "RayBackend"]
