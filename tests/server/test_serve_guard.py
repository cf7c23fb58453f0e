"""``arbiter serve`` under misuse and faults, for real: auth (401 runs nothing; no token, no
public bind), caps (413/422), overload (503/504 + Retry-After), a client that leaves (its queued
work is cancelled) and SIGTERM (in-flight requests finish, then exit 0)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time

import httpx
import pytest
from live_server import ARBITER, LiveServer, free_port

from arbiter.judge.codec import task_to_json
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.sandbox.limits import Limits

AC = 'arbiter_verdicts_total{tenant="default",verdict="AC"}'
SLEEP = "import time\ntime.sleep(%s)\nprint('done')"


def sleeper(seconds: float) -> dict:
    """A task that sleeps (no CPU: its wall limit is far above the sleep)."""
    return task_to_json(Task(language="python", source=SLEEP % seconds,
                             suite=TestSuite((StdioCase("1", b"", (b"done\n",)),)),
                             limits=Limits(cpu_seconds=2, wall_seconds=seconds * 4 + 10)))


@pytest.fixture(scope="module")
def guarded():
    s = LiveServer("--workers", "1", "--queue", "2", "--max-body-mb", "1", token="s3cret-token")
    yield s
    assert s.stop() == 0


def test_no_token_is_401_and_runs_nothing(guarded):
    before = guarded.metrics()["arbiter_cases_total"]
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
        r = httpx.post(guarded.url + "/run_code", json={"code": "print(1)", "language": "python"}, headers=headers,
                       timeout=30)
        assert r.status_code == 401
        assert httpx.get(guarded.url + "/metrics", headers=headers, timeout=30).status_code == 401
    assert guarded.metrics()["arbiter_cases_total"] == before
    r = httpx.post(guarded.url + "/run_code", json={"code": "print(1)", "language": "python"},
                   headers=guarded.headers, timeout=60)
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "1\n"
    assert "access-control-allow-origin" not in {k.lower() for k in r.headers}


def test_public_bind_without_token_is_refused():
    port = free_port()
    out = subprocess.run([str(ARBITER), "serve", "--host", "0.0.0.0", "--port", str(port)], capture_output=True,
                         text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 2 and "token" in out.stderr
    with socket.socket() as s:  # nothing listens there
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_caps_413_and_422(guarded):
    h = guarded.headers
    big = {"code": "x" * (2 * 1024 * 1024), "language": "python"}
    assert httpx.post(guarded.url + "/run_code", json=big, headers=h, timeout=60).status_code in (413, 504)
    r = httpx.post(guarded.url + "/v1/judge", json={"tasks": [sleeper(0)] * 2}, headers=h, timeout=60)
    assert r.status_code == 200
    many = dict(sleeper(0))
    many["suite"] = {"origin": "", "cases": [{"kind": "stdio", "name": str(i), "stdin": "", "expected": [""]}
                                             for i in range(10_001)]}
    r = httpx.post(guarded.url + "/v1/judge", json={"tasks": [many]}, headers=h, timeout=60)
    assert r.status_code in (413, 422)
    r = httpx.post(guarded.url + "/run_code", json={"code": "print(1)", "language": "python", "run_timeout": 10_000},
                   headers=h, timeout=60)
    assert r.status_code == 504 or r.status_code == 422
    r = httpx.post(guarded.url + "/v1/judge", json={"tasks": "nope"}, headers=h, timeout=60)
    assert r.status_code == 422 and "tasks" in r.json()["message"]
    r = httpx.post(guarded.url + "/v1/score", json={"items": [{"solution_str": "x"}]}, headers=h, timeout=60)
    assert r.status_code == 422 and "items[0]" in r.json()["message"]


def test_overload_answers_503_with_retry_after(guarded):
    h = guarded.headers
    results: list[httpx.Response] = []

    def send(i: int):  # three distinct programs: a repeat would be the tenant's reused verdict, waiting in no slot
        results.append(httpx.post(guarded.url + "/v1/judge", json={"tasks": [sleeper(1.5 + i / 100)]}, headers=h,
                                  timeout=120))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(3)]  # one runs, two wait: the queue is full
    for t in threads:
        t.start()
    _wait_for(lambda: guarded.metrics()["arbiter_queue_depth"] >= 2)
    r = httpx.post(guarded.url + "/v1/judge", json={"tasks": [sleeper(0)]}, headers=h, timeout=60)
    assert r.status_code == 503 and int(r.headers["retry-after"]) >= 1
    r = httpx.post(guarded.url + "/run_code", json={"code": "print(1)", "language": "python"}, headers=h, timeout=60)
    assert r.status_code == 504 and "retry-after" in r.headers  # /run_code: the status verl retries
    for t in threads:
        t.join()
    assert [x.status_code for x in results] == [200] * 3
    assert all(x.json()["verdicts"][0]["outcome"] == "AC" for x in results)


def test_client_disconnect_cancels_queued_work(guarded):
    h = guarded.headers
    before = guarded.metrics()
    blocker = threading.Thread(target=lambda: httpx.post(guarded.url + "/v1/judge", json={"tasks": [sleeper(2)]},
                                                         headers=h, timeout=120))
    blocker.start()
    _wait_for(lambda: guarded.metrics()["arbiter_judges_busy"] >= 1)
    with pytest.raises(httpx.ReadTimeout):  # queued behind the blocker; the client gives up and leaves
        httpx.post(guarded.url + "/v1/judge", json={"tasks": [sleeper(0), sleeper(0)]}, headers=h, timeout=0.5)
    blocker.join()
    _wait_for(lambda: guarded.metrics()["arbiter_queue_depth"] == 0)
    after = guarded.metrics()
    assert after["arbiter_cancelled_total"] - before["arbiter_cancelled_total"] == 2
    assert after.get(AC, 0) - before.get(AC, 0) == 1


def test_sigterm_drains_in_flight_then_exits_0():
    s = LiveServer()
    box: list[httpx.Response] = []
    t = threading.Thread(target=lambda: box.append(httpx.post(s.url + "/v1/judge", json={"tasks": [sleeper(1.5)]},
                                                              timeout=120)))
    t.start()
    _wait_for(lambda: s.metrics()["arbiter_judges_busy"] >= 1)
    assert s.stop() == 0
    t.join()
    assert box[0].status_code == 200 and box[0].json()["verdicts"][0]["outcome"] == "AC"
    with pytest.raises(httpx.TransportError):
        httpx.get(s.url + "/metrics", timeout=5)
    # it says where it listens and with how many judges, and when it drains and stops (it said nothing)
    said = [line.rstrip("\n") for line in s.lines]
    from arbiter.judge.judge import default_workers

    assert any(line.startswith(f"arbiter serve: listening on http://127.0.0.1:{s.port} with {default_workers()} "
                               "judges; tenants: no token (loopback only); queue ") for line in said), said
    assert any(line.startswith("arbiter serve: draining (") for line in said), said
    assert said[-1] == "arbiter serve: stopped", said


def _wait_for(cond, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)
