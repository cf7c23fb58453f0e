"""The ``--ray [ADDRESS]`` and ``--shard i/N`` options shared by the batch commands, and the run
context that puts a job on the cluster's judge pools. See ``docs/cluster.md``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import typer

LOCAL = "local"
#: Exit status of a run whose Ray cluster could not be started or joined (after retries; nothing was scored).
EXIT_NO_CLUSTER = 4


def ray_option() -> Any:
    """``--ray`` or ``--ray local`` starts a local Ray; ``--ray auto`` joins the running cluster; ``--ray HOST:PORT``.
    (typer options cannot take an optional value, so the local case is spelt ``local``.)"""
    return typer.Option(None, "--ray", metavar="ADDRESS",
                        help="run on Ray's per-node judge pools: 'local' starts a Ray here, 'auto' joins the running "
                             "cluster, or the head's HOST:PORT")


def shard_option() -> Any:
    return typer.Option(None, "--shard", metavar="i/N",
                        help="score only shard i of N (0-based; by key), into its own --out; merge with 'arbiter merge'")


def parse_shard(text: Optional[str]) -> tuple[int, int] | None:
    """``"i/N"`` -> ``(i, N)`` with ``0 <= i < N``; ``None`` stays ``None``. Raises ``typer.BadParameter``."""
    if text is None:
        return None
    from arbiter.pipelines.shards import parse_part

    try:
        return parse_part(text)
    except ValueError as exc:
        raise typer.BadParameter(f"--shard {exc}") from None


@contextlib.contextmanager
def on_ray(address: Optional[str], console: Any, *, pin_toolchain: bool = False) -> Iterator[Any]:
    """Within the block every batch map of the job runs on the cluster's pools (``None``: locally).
    A refused cluster (a node that cannot isolate, toolchains that differ) is exit 2 naming the node; a Ray
    that did not start in its tries is one line and exit :data:`EXIT_NO_CLUSTER` (4)."""
    if address is None:
        yield None
        return
    from rich.markup import escape

    from arbiter.cluster.backend import ClusterRefused, ClusterUnavailable
    from arbiter.pipelines.executor import ray_backend, use_backend

    try:
        backend = ray_backend(None if address == LOCAL else address, pin_toolchain=pin_toolchain)
    except (ClusterRefused, ConnectionError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except ClusterUnavailable as exc:
        console.print(f"[red]error:[/] {escape(str(exc))} (exit {EXIT_NO_CLUSTER}: nothing was run; retry, or "
                      "run without --ray)", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_NO_CLUSTER) from None
    try:
        with use_backend(backend):
            yield backend
    finally:
        backend.close()


def record_cluster(backend: Any, summary_path: Path) -> None:
    """Add ``"cluster": {"nodes", "retries"}`` to the run's ``summary.json`` (a Ray run only)."""
    if backend is None or not summary_path.is_file():
        return
    from arbiter.datasets.io import write_json_atomic

    data = json.loads(summary_path.read_text(encoding="utf-8"))
    data["cluster"] = {"nodes": backend.nodes(), "retries": backend.retries}
    write_json_atomic(summary_path, data, indent=2, ensure_ascii=True)
