"""The service's settings: where it listens, who may call it, how much it takes. See ``docs/serve.md``."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass

from arbiter.judge.judge import default_workers

LOOPBACK_NAMES = ("localhost",)


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

    - ``host`` / ``port``: where to listen (loopback by default; any other address needs ``token``).
    - ``token``: the Bearer token every request must carry (``None``: no auth, loopback only).
    - ``workers``: judges running at once (default one per core).
    - ``queue``: units (a ``/run_code`` request, a task, a score item) admitted but not yet
      running; past it requests get 503 (``/run_code``: 504, the status verl retries) with
      ``Retry-After``.
    - ``max_body_bytes`` (413), ``max_items`` tasks/items per request and ``max_tests`` cases
      per task (422), ``max_output_bytes``: stdout per run, ``max_memory_mb`` / ``max_seconds``:
      the largest limits a request may ask for (422).
    - ``stream_over``: a batch of more than this many answers as NDJSON when asked for.
    - ``drain_seconds``: how long a SIGTERM waits for requests in flight.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    token: str | None = None
    workers: int = 0
    queue: int = 256
    max_body_bytes: int = 64 * 1024 * 1024
    max_items: int = 4096
    max_tests: int = 10_000
    max_output_bytes: int = 64 * 1024 * 1024
    max_memory_mb: int = 4096
    default_memory_mb: int = 1024
    max_seconds: float = 60.0
    drain_seconds: float = 120.0

    def __post_init__(self) -> None:
        if not is_loopback(self.host) and not self.token:
            raise ValueError(f"binding {self.host} (not loopback) needs an API token: --token or ARBITER_TOKEN")
        if self.workers <= 0:
            object.__setattr__(self, "workers", default_workers())
        if self.queue < 1:
            raise ValueError(f"queue must be at least 1, got {self.queue}")

    @staticmethod
    def env_token() -> str | None:
        return os.environ.get("ARBITER_TOKEN") or None
