"""``arbiter serve``: a judging service (SandboxFusion-compatible ``/run_code``, native
``/v1/judge`` and ``/v1/score``, ``/healthz``, ``/metrics``). See ``docs/serve.md``."""

from arbiter.server.app import create_app
from arbiter.server.config import ServerConfig

__all__ = ["ServerConfig", "create_app"]
