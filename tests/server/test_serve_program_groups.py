"""/run_code requests of one program sent at once (as verl sends a response's cases) share a
sandbox: every answer is its own request's, one program's failure stays in its own case."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from live_server import LiveServer

CODE = "import sys\nn = int(sys.stdin.read())\nif n % 5 == 4:\n    raise SystemExit(3)\nprint(n * n)\n"


@pytest.fixture(scope="module")
def server():
    s = LiveServer()
    yield s
    s.stop()


def post(server, code: str, stdin: str) -> dict:
    r = httpx.post(server.url + "/run_code", json={"code": code, "language": "python", "stdin": stdin,
                                                   "run_timeout": 10, "memory_limit_MB": 1024}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def test_cases_of_one_program_sent_at_once_get_their_own_answers(server):
    other = "print(input()[::-1])\n"
    jobs = [(CODE, str(n)) for n in range(24)] + [(other, f"ab{n}") for n in range(8)]
    with ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(lambda job: post(server, *job), jobs))
    for (code, stdin), a in zip(jobs, answers):
        if code == other:
            assert (a["status"], a["run_result"]["stdout"]) == ("Success", stdin[::-1] + "\n")
        elif int(stdin) % 5 == 4:
            assert (a["status"], a["run_result"]["return_code"]) == ("Failed", 3)
        else:
            assert (a["status"], a["run_result"]["stdout"]) == ("Success", f"{int(stdin) ** 2}\n")


def test_a_later_request_of_the_same_program_runs_again(server):
    assert post(server, CODE, "7")["run_result"]["stdout"] == "49\n"
    assert post(server, CODE, "9")["run_result"]["return_code"] == 3
    assert post(server, CODE, "8")["run_result"]["stdout"] == "64\n"
