"""``/metrics`` through prometheus_client: each app's own registry (two apps in one process keep
their counts apart, the global registry is untouched), and the sum of several nodes' snapshots
(what Ray Serve's ``/metrics`` answers) parsed back by prometheus_client's own parser."""

from __future__ import annotations

from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from arbiter.server.metrics import Metrics, merge, render


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_two_apps_in_one_process_do_not_share_counts():
    a, b = Metrics(), Metrics()
    a.verdict("alice", "AC", 3)
    a.run_code("alice", "Success")
    b.verdict("bob", "WA", 2)
    sa, sb = _samples(a.text()), _samples(b.text())
    assert sa[("arbiter_verdicts_total", (("tenant", "alice"), ("verdict", "AC")))] == 1
    assert ("arbiter_verdicts_total", (("tenant", "bob"), ("verdict", "WA"))) not in sa
    assert sa[("arbiter_run_code_total", (("status", "Success"), ("tenant", "alice")))] == 1
    assert sa[("arbiter_cases_total", ())] == 3 and sb[("arbiter_cases_total", ())] == 2
    assert not any(name.startswith("arbiter_") for name in REGISTRY._names_to_collectors)


def test_nodes_snapshots_add_up_and_render_as_prometheus_text():
    a, b = Metrics(), Metrics()
    for m, judges in ((a, 2), (b, 4)):
        m.set("arbiter_judges", judges)
        m.verdict("alice", "TLE", 1)
        m.observe("arbiter_tenant_wait_seconds", 0.3, tenant="alice")
        m.refused("alice", "tenant_queue", 429)
    b.observe("arbiter_tenant_wait_seconds", 20.0, tenant="alice")
    total = merge([a.snapshot(), b.snapshot()])
    total[("arbiter_nodes", "gauge", "arbiter_nodes", ())] = 2
    s = _samples(render(total))
    assert s[("arbiter_judges", ())] == 6 and s[("arbiter_nodes", ())] == 2
    assert s[("arbiter_verdicts_total", (("tenant", "alice"), ("verdict", "TLE")))] == 2
    assert s[("arbiter_refused_total", (("reason", "tenant_queue"), ("status", "429"), ("tenant", "alice")))] == 2
    assert s[("arbiter_tenant_wait_seconds_count", (("tenant", "alice"),))] == 3
    assert s[("arbiter_tenant_wait_seconds_bucket", (("le", "0.5"), ("tenant", "alice")))] == 2
    assert s[("arbiter_tenant_wait_seconds_bucket", (("le", "+Inf"), ("tenant", "alice")))] == 3
    assert a.value("arbiter_verdicts_total", verdict="TLE", tenant="alice") == 1
