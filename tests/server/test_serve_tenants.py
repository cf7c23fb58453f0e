"""Tenants of one ``arbiter serve``, for real: tokens from a token file, hard caps (429 +
Retry-After on /v1, 504 on /run_code), fair queuing (one tenant's long batch does not hold
another's short request behind it), /metrics per tenant, the start-up line, the token as a path
prefix (verl's client sends no header), and a SIGTERM drain that answers new requests 503."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import httpx
import pytest
from live_server import LiveServer

from arbiter.judge.codec import task_to_json
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.sandbox.limits import Limits

TOKENS = "# name token caps\nalice tok-alice-0123456789 queue=3\nbob tok-bob-0123456789 metrics=all\ncarol tok-carol-01234 judges=1\n"


def sleeper(seconds: float, tag: str = "done") -> dict:
    src = f"import time\ntime.sleep({seconds})\nprint({tag!r})"
    return task_to_json(Task(language="python", source=src, suite=TestSuite((StdioCase("1", b"", (f"{tag}\n".encode(),)),)),
                             limits=Limits(cpu_seconds=2, wall_seconds=seconds * 4 + 10)))


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer tok-{name}-0123456789" if name != "carol" else "Bearer tok-carol-01234"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tmp_path_factory.mktemp("tenants") / "tokens.txt"
    path.write_text(TOKENS)
    s = LiveServer("--workers", "1", "--tokens", str(path), token="tok-bob-0123456789")
    yield s
    assert s.stop() == 0


def judge(server, who: str, tasks: list[dict], out: list | None = None) -> httpx.Response:
    r = httpx.post(server.url + "/v1/judge", json={"tasks": tasks}, headers=auth(who), timeout=120)
    if out is not None:
        out.append((time.monotonic(), r))
    return r


def test_start_up_line_says_where_and_how_many_judges(server):
    line = server.startup_line
    assert f"listening on http://127.0.0.1:{server.port} with 1 judges" in line
    assert "alice, bob, carol" in line


def test_unknown_token_is_401(server):
    r = httpx.post(server.url + "/v1/judge", json={"tasks": [sleeper(0)]}, headers={"Authorization": "Bearer no"},
                   timeout=30)
    assert r.status_code == 401


def test_a_tenant_over_its_queue_gets_429_and_others_go_on(server):
    done: list = []
    flood = threading.Thread(target=judge, args=(server, "alice", [sleeper(1.5, f"a{i}") for i in range(4)], done))
    flood.start()  # one runs, three wait: alice's queue (3) is full
    _wait_for(lambda: server.metrics().get('arbiter_tenant_queue_depth{tenant="alice"}', 0) >= 3)
    r = judge(server, "alice", [sleeper(0)])
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    r = httpx.post(server.url + "/run_code", json={"code": "print(1)", "language": "python"}, headers=auth("alice"),
                   timeout=30)
    assert r.status_code == 504 and "retry-after" in r.headers  # /run_code: verl retries 504 only
    r = judge(server, "bob", [sleeper(0, "bob")])  # bob is not alice's queue
    assert r.status_code == 200 and r.json()["verdicts"][0]["outcome"] == "AC"
    assert flood.is_alive(), "bob's request waited for alice's whole batch"
    flood.join()
    assert done[0][1].status_code == 200 and [v["outcome"] for v in done[0][1].json()["verdicts"]] == ["AC"] * 4
    m = server.metrics()
    assert m['arbiter_refused_total{reason="tenant_queue",status="429",tenant="alice"}'] >= 1
    assert m['arbiter_refused_total{reason="tenant_queue",status="504",tenant="alice"}'] >= 1


def test_fair_queue_serves_a_short_request_between_a_long_batch(server):
    """carol's batch of slow units, then bob's one short unit: bob's runs after at most one of
    carol's (the least-served tenant goes next), not after all of them."""
    done: list = []
    carol = threading.Thread(target=judge, args=(server, "carol", [sleeper(1.0, f"c{i}") for i in range(8)], done))
    carol.start()
    _wait_for(lambda: server.metrics().get('arbiter_tenant_judges_busy{tenant="carol"}', 0) >= 1)
    bob: list = []
    judge(server, "bob", [sleeper(0, "bob")], bob)
    carol.join()
    assert bob[0][1].json()["verdicts"][0]["outcome"] == "AC"
    assert bob[0][0] < done[0][0]
    m = server.metrics()
    waits = m['arbiter_tenant_wait_seconds_sum{tenant="bob"}'] / m['arbiter_tenant_wait_seconds_count{tenant="bob"}']
    assert waits < m['arbiter_tenant_wait_seconds_sum{tenant="carol"}'] / m['arbiter_tenant_wait_seconds_count{tenant="carol"}']


def test_verdicts_are_remembered_per_tenant_never_across_tenants(server):
    """A tenant's repeat of its own task is a reused verdict; another tenant's identical task is
    judged for it (no tenant learns from ``cached`` what another submitted)."""
    task = sleeper(0, "remembered-per-tenant")
    first = judge(server, "alice", [task]).json()["verdicts"][0]
    other = judge(server, "bob", [task]).json()["verdicts"][0]
    again = judge(server, "alice", [task]).json()["verdicts"][0]
    assert [v["outcome"] for v in (first, other, again)] == ["AC"] * 3
    assert (first["cached"], other["cached"], again["cached"]) == (False, False, True)


def test_metrics_per_tenant_keep_verdicts_and_run_code_statuses_apart(server):
    r = httpx.post(server.url + "/t/tok-carol-01234/run_code", json={"code": "print(1)", "language": "python"},
                   timeout=60)  # the token as a path prefix: verl's client sends no Authorization header
    assert r.status_code == 200 and r.json()["status"] == "Success"
    m = server.metrics()
    assert m['arbiter_run_code_total{status="Success",tenant="carol"}'] >= 1
    assert m['arbiter_verdicts_total{tenant="bob",verdict="AC"}'] >= 1
    assert not any("Success" in k for k in m if k.startswith("arbiter_verdicts_total"))
    assert not any("verdict=" in k for k in m if k.startswith("arbiter_run_code_total"))
    assert m['arbiter_tenant_judge_seconds_total{tenant="alice"}'] >= 6.0
    assert httpx.get(server.url + "/metrics", timeout=30).status_code == 401


def test_sigterm_drains_new_requests_get_503():
    s = LiveServer()
    box: list = []
    t = threading.Thread(target=lambda: box.append(httpx.post(s.url + "/v1/judge", json={"tasks": [sleeper(2)]},
                                                              timeout=120)))
    t.start()
    _wait_for(lambda: s.metrics()["arbiter_judges_busy"] >= 1)
    with httpx.Client(timeout=30) as keep_alive:  # a connection opened before the drain
        assert keep_alive.get(s.url + "/v1/ping").json() == "pong"
        s.proc.send_signal(signal.SIGTERM)
        _wait_for(lambda: keep_alive.get(s.url + "/healthz").status_code == 503)
        r = keep_alive.post(s.url + "/run_code", json={"code": "print(1)", "language": "python"})
        assert r.status_code == 503 and "draining" in r.json()["message"] and "retry-after" in r.headers
    t.join()
    assert box[0].status_code == 200 and box[0].json()["verdicts"][0]["outcome"] == "AC"
    assert s.proc.wait(timeout=60) == 0
    assert "draining" in s.output()


def _wait_for(cond, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_bad_token_file_exits_2(tmp_path):
    from live_server import ARBITER

    bad = tmp_path / "tokens.txt"
    bad.write_text("alice tok judges=zero\n")
    out = subprocess.run([str(ARBITER), "serve", "--port", "0", "--tokens", str(bad)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "line 1" in out.stderr and "judges" in out.stderr
