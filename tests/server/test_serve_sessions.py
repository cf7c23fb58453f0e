"""Issue 28 through ``arbiter serve``: two clients (two tenants) whose submissions share the
server's warm sandboxes. Client B's copier must not find client A's stash; a page-cache filler
of A must not hide the memory of B's program; correct C++ submitted by both at once is AC.
(The same pairs through ``judge()``: tests/sandbox/test_session_state.py, tests/judge.)"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import pytest
from live_server import LiveServer

from arbiter.client.client import Client
from arbiter.judge.verdict import Outcome
from session_pairs import CPP_COMPILE, FILL, HOG, PAIRS, big_binary_task, memory_task, pair_tasks

#: The pairs' compile spec within the service's cap (60 s).
SERVED_COMPILE = dataclasses.replace(CPP_COMPILE, timeout_seconds=60)


def served(task):
    return dataclasses.replace(task, compile=SERVED_COMPILE)


def round_of(task, i: int):
    """``task`` as another program each round (a comment more): a repeat of the same program
    would be the tenant's reused verdict, not a new run in a warm sandbox."""
    return dataclasses.replace(task, source=f"{task.source}\n# round {i}\n")


@pytest.fixture(scope="module")
def server():
    s = LiveServer("--workers", "1")  # one judge at a time: B's submission gets A's sandbox back
    yield s
    s.stop()


@pytest.fixture(scope="module")
def clients(server):
    a, b = Client(server.url), Client(server.url)
    yield a, b
    a.close()
    b.close()


@pytest.mark.parametrize("name", ["tcp_time_wait", "udp_snmp_counters", "lo_dev_counters"])
def test_client_b_cannot_copy_what_client_a_stashed(clients, name):
    a, b = clients
    stasher, copier = pair_tasks(name)
    for i in range(3):
        assert a.judge([round_of(stasher, i)])[0].outcome is Outcome.AC
        got = b.judge([round_of(copier, i)])[0]
        assert got.outcome is Outcome.WA and not got.cached, (name, got.reason)


def test_client_a_page_cache_hides_no_memory_of_client_b(clients):
    a, b = clients
    assert a.judge([served(memory_task(FILL))])[0].outcome is Outcome.AC
    assert b.judge([served(memory_task(HOG))])[0].outcome is Outcome.MLE
    same = b.judge([served(memory_task(FILL, HOG))])[0]
    assert [c.outcome for c in same.cases] == [Outcome.AC, Outcome.MLE], same.reason


def test_correct_cpp_from_two_clients_at_once_is_ac():
    server = LiveServer("--workers", "2")
    try:
        with Client(server.url) as a, Client(server.url) as b:
            a.judge([served(big_binary_task(0))])  # (compiled once)

            def submit(client_and_n):
                client, n = client_and_n
                return client.judge([served(big_binary_task(n))])[0]

            with ThreadPoolExecutor(4) as ex:
                verdicts = list(ex.map(submit, [((a, b)[i % 2], i) for i in range(120)]))
        bad = [v.reason for v in verdicts if v.outcome is not Outcome.AC]
        assert not bad, bad[:5]
    finally:
        server.stop()


assert set(PAIRS) >= {"tcp_time_wait", "udp_snmp_counters", "lo_dev_counters"}
