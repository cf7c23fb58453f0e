"""A client of ``arbiter serve`` (httpx; sync :class:`Client` and :class:`AsyncClient`): judge
tasks, score verl items, run SandboxFusion code. Overload (503/504) and sandbox failures are
retried with backoff, then raised as :class:`~arbiter.rewards.codegen.SandboxFailure`: never a
silent 0. See ``docs/serve.md``."""

from arbiter.client.client import AsyncClient, Client, ServerError, shared_client

__all__ = ["AsyncClient", "Client", "ServerError", "shared_client"]
