"""Counters of the service, per tenant, written as Prometheus text (``GET /metrics``); a snapshot
several nodes' metrics add up from (:func:`merge`). arbiter's verdicts (``verdict`` label) and
SandboxFusion's ``/run_code`` statuses (``status`` label) are separate metrics. See ``docs/serve.md``."""

from __future__ import annotations

import threading
import time
from collections import Counter

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: name -> (type, help)
HELP = {
    "arbiter_judges": ("gauge", "judge slots"),
    "arbiter_nodes": ("gauge", "nodes whose counters this sum holds (Ray Serve)"),
    "arbiter_judges_busy": ("gauge", "judge slots running a unit now"),
    "arbiter_queue_depth": ("gauge", "units admitted and waiting for a judge"),
    "arbiter_draining": ("gauge", "1 while a SIGTERM drain is under way"),
    "arbiter_body_budget_bytes": ("gauge", "request-body bytes that may be read and parsed at once"),
    "arbiter_body_bytes_held": ("gauge", "request-body bytes held of that budget now"),
    "arbiter_body_bytes_held_max": ("gauge", "the most request-body bytes ever held of that budget"),
    "arbiter_body_waits": ("gauge", "bodies that waited for their share of the budget"),
    "arbiter_tenant_queue_depth": ("gauge", "units of the tenant waiting"),
    "arbiter_tenant_judges_busy": ("gauge", "judges running the tenant's units"),
    "arbiter_tenant_judge_seconds_total": ("counter", "wall seconds of judges spent on the tenant's units"),
    "arbiter_tenant_wait_seconds": ("histogram", "seconds a unit waited for a judge"),
    "arbiter_verdicts_total": ("counter", "arbiter verdicts given (/v1/judge, /v1/score)"),
    "arbiter_run_code_total": ("counter", "SandboxFusion /run_code answers by status"),
    "arbiter_run_jupyter_total": ("counter", "SandboxFusion /run_jupyter answers by status"),
    "arbiter_run_code_adopted_total": ("counter", "/run_code retries that took over their earlier attempt's place"),
    "arbiter_refused_total": ("counter", "requests refused for load (429/503/504) by reason"),
    "arbiter_cases_total": ("counter", "test cases run"),
    "arbiter_sandbox_errors_total": ("counter", "arbiter's own sandbox failures"),
    "arbiter_cancelled_total": ("counter", "queued units dropped because their client left"),
    "arbiter_request_seconds": ("histogram", "request latency by route"),
}
GAUGES = {k for k, (kind, _) in HELP.items() if kind == "gauge"}


def _labels(labels: tuple[tuple[str, str], ...]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"


class Metrics:
    """Thread-safe counters, gauges and histograms keyed by ``(name, labels)``."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self._values: Counter[tuple[str, tuple]] = Counter()
        self._lock = threading.Lock()

    def add(self, name: str, value: float = 1, **labels: str) -> None:
        with self._lock:
            self._values[(name, tuple(sorted(labels.items())))] += value

    def set(self, name: str, value: float, **labels: str) -> None:
        with self._lock:
            self._values[(name, tuple(sorted(labels.items())))] = value

    def observe(self, name: str, seconds: float, **labels: str) -> None:
        """One sample of a histogram (cumulative buckets, ``_sum``, ``_count``)."""
        base = tuple(sorted(labels.items()))
        with self._lock:
            for b in BUCKETS:
                if seconds <= b:
                    self._values[(name + "_bucket", base + (("le", f"{b:g}"),))] += 1
            self._values[(name + "_bucket", base + (("le", "+Inf"),))] += 1
            self._values[(name + "_sum", base)] += seconds
            self._values[(name + "_count", base)] += 1

    # ---- what the routes report -----------------------------------------------------------
    def verdict(self, tenant: str, verdict: str, cases: int) -> None:
        self.add("arbiter_verdicts_total", tenant=tenant, verdict=verdict)
        self.add("arbiter_cases_total", cases)
        if verdict == "SANDBOX_ERROR":
            self.add("arbiter_sandbox_errors_total")

    def run_code(self, tenant: str, status: str) -> None:
        self.add("arbiter_run_code_total", tenant=tenant, status=status)
        self.add("arbiter_cases_total")

    def refused(self, tenant: str, reason: str, status: int) -> None:
        self.add("arbiter_refused_total", tenant=tenant, reason=reason, status=str(status))

    def value(self, name: str, **labels: str) -> float:
        with self._lock:
            return self._values.get((name, tuple(sorted(labels.items()))), 0)

    def snapshot(self) -> dict[tuple[str, tuple], float]:
        with self._lock:
            return dict(self._values)

    def text(self) -> str:
        return render(self.snapshot())


def merge(snapshots: list[dict]) -> dict[tuple[str, tuple], float]:
    """Several nodes' :meth:`Metrics.snapshot` added up (gauges too: a cluster's queue is the
    sum of its nodes')."""
    total: Counter = Counter()
    for snap in snapshots:
        total.update(snap)
    return dict(total)


def render(values: dict[tuple[str, tuple], float]) -> str:
    """The Prometheus text exposition of a snapshot."""
    lines: list[str] = []
    for family in sorted({_family(name) for name, _ in values} | {"arbiter_judges"}):
        kind, text = HELP.get(family, ("untyped", ""))
        lines += [f"# HELP {family} {text}", f"# TYPE {family} {kind}"]
        for (name, labels), v in sorted(values.items(), key=_order):
            if _family(name) == family:
                lines.append(f"{name}{_labels(labels)} {int(v)}" if float(v).is_integer() else
                             f"{name}{_labels(labels)} {v:.6f}")
    return "\n".join(lines) + "\n"


def _family(name: str) -> str:
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in HELP:
            return name[: -len(suffix)]
    return name


def _order(item):
    (name, labels), _ = item
    le = dict(labels).get("le")
    rest = tuple(kv for kv in labels if kv[0] != "le")
    return name, rest, float("inf") if le == "+Inf" else float(le) if le else 0.0
