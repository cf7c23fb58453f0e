"""The service's settings: where it listens, who may call it, how much it takes. See ``docs/serve.md``."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field

from arbiter.judge.judge import default_workers
from arbiter.server.tenants import Tenants

LOOPBACK_NAMES = ("localhost",)
#: verl's sandbox_fusion client waits ``compile_timeout + run_timeout + 10`` s for an answer, then
#: fails the case (a read timeout is never retried; a 504 is).
VERL_API_SLACK = 10.0
#: A ``/run_code`` request not answered this many seconds before that is answered 504.
ANSWER_MARGIN = 5.0


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerConfig:
    """Settings of one ``arbiter serve`` process.

    - ``host`` / ``port``: where to listen (loopback by default; any other address needs tenants).
    - ``tenants``: who may call it (tokens; none: no auth, loopback only, one anonymous tenant).
    - ``workers``: judge slots (default one per core).
    - ``queue``: units (a ``/run_code`` request, a task, a score item) waiting over all tenants;
      each tenant has its own caps (:class:`~arbiter.server.admission.Tenant`).
    - ``hold_seconds``: how long a ``/run_code`` request may wait for its answer before it is
      answered 504 (its client retries); ``0``: verl's client timeout less :data:`ANSWER_MARGIN`.
      The unit keeps its place for ``retry_window`` seconds: the same request sent again takes
      it over (or its answer).
    - ``body_budget_bytes``: what bodies over 1 MiB may hold at once (three copies each while
      parsed); a request waits for its share.
    - ``max_body_bytes`` (413), ``max_items`` tasks/items per request and ``max_tests`` cases
      per task (422), ``max_output_bytes``: stdout per run (and fetched files per answer),
      ``max_memory_mb`` / ``max_seconds``: the largest limits a request may ask for (422).
    - ``drain_seconds``: how long a SIGTERM waits for requests in flight.
    - ``node``: this node's name in answers (``executor_pod_name``; on Ray, its node id).
    """

    host: str = "127.0.0.1"
    port: int = 8080
    tenants: Tenants = field(default_factory=Tenants)
    workers: int = 0
    queue: int = 4096
    hold_seconds: float = 0.0
    retry_window: float = 30.0
    max_body_bytes: int = 64 * 1024 * 1024
    body_budget_bytes: int = 192 * 1024 * 1024
    max_items: int = 4096
    max_tests: int = 10_000
    max_output_bytes: int = 64 * 1024 * 1024
    max_memory_mb: int = 4096
    default_memory_mb: int = 1024
    max_seconds: float = 60.0
    max_processes: int = 256
    max_open_files: int = 1024
    drain_seconds: float = 120.0
    node: str | None = None

    def __post_init__(self) -> None:
        if not is_loopback(self.host) and not self.tenants.required:
            raise ValueError(f"binding {self.host} (not loopback) needs API tokens: --token, --tokens FILE, "
                             f"ARBITER_TOKEN or ARBITER_TOKENS")
        if self.workers <= 0:
            object.__setattr__(self, "workers", default_workers())
        if self.queue < 1:
            raise ValueError(f"queue must be at least 1, got {self.queue}")

    @staticmethod
    def env_token() -> str | None:
        return os.environ.get("ARBITER_TOKEN") or None
