"""The service's counters, gauges and histograms, per tenant, kept by ``prometheus_client`` in a
registry of the app's own (two apps in one process do not clash) and written as Prometheus text
(``GET /metrics``); a snapshot several nodes' metrics add up from (:func:`merge`, :func:`render`:
Ray Serve). arbiter's verdicts (``verdict`` label) and SandboxFusion's ``/run_code`` statuses
(``status`` label) are separate metrics. See ``docs/serve.md``, "Metrics"."""

from __future__ import annotations

import time
from collections import Counter as Tally
from typing import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: name -> (type, help, label names)
HELP: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "arbiter_judges": ("gauge", "judge slots", ()),
    "arbiter_nodes": ("gauge", "nodes whose counters this sum holds (Ray Serve)", ()),
    "arbiter_judges_busy": ("gauge", "judge slots running a unit now", ()),
    "arbiter_queue_depth": ("gauge", "units admitted and waiting for a judge", ()),
    "arbiter_draining": ("gauge", "1 while a SIGTERM drain is under way", ()),
    "arbiter_body_budget_bytes": ("gauge", "request-body bytes that may be read and parsed at once", ()),
    "arbiter_body_bytes_held": ("gauge", "request-body bytes held of that budget now", ()),
    "arbiter_body_bytes_held_max": ("gauge", "the most request-body bytes ever held of that budget", ()),
    "arbiter_body_waits": ("gauge", "bodies that waited for their share of the budget", ()),
    "arbiter_tenant_queue_depth": ("gauge", "units of the tenant waiting", ("tenant",)),
    "arbiter_tenant_judges_busy": ("gauge", "judges running the tenant's units", ("tenant",)),
    "arbiter_tenant_judge_seconds_total": ("counter", "wall seconds of judges spent on the tenant's units",
                                           ("tenant",)),
    "arbiter_tenant_wait_seconds": ("histogram", "seconds a unit waited for a judge", ("tenant",)),
    "arbiter_verdicts_total": ("counter", "arbiter verdicts given (/v1/judge, /v1/score)", ("tenant", "verdict")),
    "arbiter_run_code_total": ("counter", "SandboxFusion /run_code answers by status", ("status", "tenant")),
    "arbiter_run_jupyter_total": ("counter", "SandboxFusion /run_jupyter answers by status", ("status", "tenant")),
    "arbiter_run_code_adopted_total": ("counter", "/run_code retries that took over their earlier attempt's place",
                                       ("tenant",)),
    "arbiter_refused_total": ("counter", "requests refused for load (429/503/504) by reason",
                              ("reason", "status", "tenant")),
    "arbiter_cases_total": ("counter", "test cases run", ()),
    "arbiter_sandbox_errors_total": ("counter", "arbiter's own sandbox failures", ()),
    "arbiter_cancelled_total": ("counter", "queued units dropped because their client left", ()),
    "arbiter_request_seconds": ("histogram", "request latency by route", ("route",)),
}
_KINDS = {"gauge": Gauge, "counter": Counter}
#: Metrics only a cluster's sum has (:func:`render` under Ray Serve), not one app.
CLUSTER_ONLY = ("arbiter_nodes",)
#: A snapshot: (family, type, sample name, labels) -> value.
Snapshot = dict[tuple[str, str, str, tuple[tuple[str, str], ...]], float]


class Metrics:
    """The metrics of :data:`HELP` in a registry of their own (thread-safe: prometheus_client's)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.registry = CollectorRegistry(auto_describe=False)
        self._metrics = {}
        for name, (kind, text, labels) in HELP.items():
            if name in CLUSTER_ONLY:
                continue
            if kind == "histogram":
                m = Histogram(name, text, labels, buckets=BUCKETS, registry=self.registry)
            else:
                m = _KINDS[kind](name, text, labels, registry=self.registry)
            self._metrics[name] = m

    def _child(self, name: str, labels: dict[str, str]):
        m = self._metrics[name]
        return m.labels(**labels) if labels else m

    def add(self, name: str, value: float = 1, **labels: str) -> None:
        self._child(name, labels).inc(value)

    def set(self, name: str, value: float, **labels: str) -> None:
        self._child(name, labels).set(value)

    def observe(self, name: str, seconds: float, **labels: str) -> None:
        """One sample of a histogram (cumulative buckets, ``_sum``, ``_count``)."""
        self._child(name, labels).observe(seconds)

    # ---- what the routes report -----------------------------------------------------------
    def verdict(self, tenant: str, verdict: str, cases: int) -> None:
        self.add("arbiter_verdicts_total", tenant=tenant, verdict=verdict)
        self.cases_run(cases)
        if verdict == "SANDBOX_ERROR":
            self.add("arbiter_sandbox_errors_total")

    def cases_run(self, cases: int) -> None:
        """Cases a judge slot ran the program on (skipped ones and reused verdicts are not run)."""
        self.add("arbiter_cases_total", cases)

    def run_code(self, tenant: str, status: str) -> None:
        """One ``/run_code`` answer (its case is counted where it ran: :meth:`cases_run`)."""
        self.add("arbiter_run_code_total", tenant=tenant, status=status)

    def refused(self, tenant: str, reason: str, status: int) -> None:
        self.add("arbiter_refused_total", tenant=tenant, reason=reason, status=str(status))

    def value(self, name: str, **labels: str) -> float:
        """A sample's value (0 when it was never set)."""
        want = tuple(sorted(labels.items()))
        for (_, _, sample, lab), v in self.snapshot().items():
            if sample == name and tuple(sorted(lab)) == want:
                return v
        return 0.0

    def snapshot(self) -> Snapshot:
        """Every sample (but ``_created``: a time, not an amount) as plain values to send or add up."""
        out: Snapshot = {}
        for family in self.registry.collect():
            for s in family.samples:
                if not s.name.endswith("_created"):
                    out[(family.name, family.type, s.name, tuple(s.labels.items()))] = s.value
        return out

    def text(self) -> str:
        return generate_latest(self.registry).decode("utf-8")


def merge(snapshots: Iterable[Snapshot]) -> Snapshot:
    """Several nodes' :meth:`Metrics.snapshot` added up (gauges too: a cluster's queue is the
    sum of its nodes')."""
    total: Tally = Tally()
    for snap in snapshots:
        total.update(snap)
    return dict(total)


class _Fixed:
    """A collector of a snapshot's samples (what :func:`render` hands to prometheus_client)."""

    def __init__(self, values: Snapshot):
        self.values = values

    def collect(self) -> Iterable[Metric]:
        families: dict[str, Metric] = {}
        for (family, kind, sample, labels), v in sorted(self.values.items(), key=_order):
            if family not in families:
                known = HELP.get(family) or HELP.get(family + "_total") or ("", family)
                families[family] = Metric(family, known[1], kind)
            families[family].add_sample(sample, dict(labels), v)
        return list(families.values())


def render(values: Snapshot) -> str:
    """The Prometheus text exposition of a (merged) snapshot, written by prometheus_client."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(values))
    return generate_latest(registry).decode("utf-8")


def _order(item):
    (family, _, sample, labels), _ = item
    le = dict(labels).get("le")
    rest = tuple(kv for kv in labels if kv[0] != "le")
    return family, sample, rest, float(le) if le else 0.0


def visible_to(text: str, tenant: str) -> str:
    """The Prometheus ``text`` without the samples of tenants other than ``tenant`` (a series
    labelled ``tenant="..."``); server-wide series and comments stay."""
    mine = f'tenant="{tenant}"'
    return "".join(line for line in text.splitlines(keepends=True)
                   if line.startswith("#") or 'tenant="' not in line or mine in line)
