"""Red team (issue 31, step judge per tenant): what one tenant of ``arbiter serve`` can learn of
another's submissions. Each test holds a leak the red team found, now closed."""

from __future__ import annotations

import httpx
import pytest
from live_server import LiveServer

from arbiter.judge.codec import task_to_json
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite

TOKENS = "alice tok-alice-0123456789\nbob tok-bob-0123456789\nops tok-ops-0123456789 metrics=all\n"

# Prints how many UDP datagrams its network namespace has sent so far, then sends as many as
# its stdin says: a counter that survives the process, in the session's network namespace.
STASH = """import socket, sys
def count():
    lines = [l for l in open('/proc/net/snmp').read().splitlines() if l.startswith('Udp:')]
    return int(dict(zip(lines[0].split()[1:], lines[1].split()[1:]))['OutDatagrams'])
print('seen', count())
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.stdin.read().strip() or 0)):
    s.sendto(b'x', ('127.0.0.1', 9))
"""


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer tok-{name}-0123456789"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tmp_path_factory.mktemp("redteam-tenants") / "tokens.txt"
    path.write_text(TOKENS)
    s = LiveServer("--workers", "1", "--tokens", str(path), token="tok-bob-0123456789")
    yield s
    assert s.stop() == 0


def run_code(server, who: str, stdin: str) -> str:
    r = httpx.post(server.url + "/run_code", json={"code": STASH, "language": "python", "stdin": stdin},
                   headers=auth(who), timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["run_result"]["stdout"]


def test_run_code_warm_session_is_not_shared_between_tenants(server):
    assert run_code(server, "alice", "0") == "seen 0\n"  # a fresh session
    run_code(server, "alice", "42")  # alice's (secret) input, stashed in the session's UDP counter
    seen = run_code(server, "bob", "0")
    assert seen == "seen 0\n", f"bob's run read what alice's run left: {seen!r}"


def test_metrics_do_not_show_a_tenant_another_tenants_verdicts(server):
    task = task_to_json(Task(language="python", source="print(input())",
                             suite=TestSuite((StdioCase("1", b"secret-answer\n", (b"secret-answer\n",)),))))
    r = httpx.post(server.url + "/v1/judge", json={"tasks": [task]}, headers=auth("alice"), timeout=120)
    assert r.status_code == 200 and r.json()["verdicts"][0]["outcome"] == "AC"
    text = httpx.get(server.url + "/metrics", headers=auth("bob"), timeout=30).text
    leaked = [line for line in text.splitlines() if 'tenant="alice"' in line and not line.startswith("#")]
    assert not leaked, f"bob's /metrics shows alice's: {leaked[:3]}"
    own = [line for line in text.splitlines() if 'tenant="bob"' in line]
    assert own or "arbiter_judges " in text, text[:500]  # bob still reads his own and the server's series
    everything = httpx.get(server.url + "/metrics", headers=auth("ops"), timeout=30).text
    assert any('tenant="alice"' in line and not line.startswith("#") for line in everything.splitlines())
