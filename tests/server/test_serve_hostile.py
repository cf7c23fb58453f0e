"""Every program of tests/hostile and tests/cheats through ``arbiter serve`` (``/v1/judge``, and
``/run_code`` for stdin programs) gets the verdict ``judge()`` gives it in this process, and the
server answers the next request normally."""

from __future__ import annotations

import importlib.util
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from live_server import LiveServer

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.codec import task_to_json
from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.sandbox.limits import MiB, Limits

TESTS = Path(__file__).resolve().parents[1]
HOSTILE = sorted(TESTS.glob("hostile/python/*.py")) + sorted(TESTS.glob("hostile/cpp/*.cpp"))
CPU = 0.5  # seconds per case on every path (a limit-hitting program hits it far past)
OUTPUT = 1 * MiB  # stdout cap on every path (the server is started with --max-output-mb 1)
#: /run_code's run status -> the case verdict it means (an ``ok`` run is compared as the checker does).
STATUS_OUTCOME = {"runtime_error": "RE", "time_limit": "TLE", "memory_limit": "MLE", "output_limit": "OLE"}


def _cheat_tasks():
    spec = importlib.util.spec_from_file_location("judge_cheat_suites", TESTS / "judge" / "test_judge.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.TASKS, mod.header


def _meta(path: Path) -> dict[str, str]:
    meta = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*(?:#|//)\s*([a-z-]+):\s?(.*)$", line)
        if m:
            meta[m.group(1)] = m.group(2).strip()
    return meta


def _cpu(meta: dict[str, str]) -> float:
    """:data:`CPU`, or the program's own ``cpu=`` when it must pass and needs more (the scratch
    flood's 60,000 files take over 0.5 s of CPU on a slow machine, three paths at once)."""
    m = re.search(r"cpu=([0-9.]+)", meta.get("limits", ""))
    return max(CPU, float(m.group(1))) if m and meta.get("expect") == "ok" else CPU


def _memory_mb(meta: dict[str, str]) -> int:
    m = re.search(r"memory=(\d+)MiB", meta.get("limits", ""))
    return int(m.group(1)) if m else 256


def hostile_task(path: Path) -> Task:
    meta = _meta(path)
    expected = (meta.get("stdout", "") + "\n").encode() if meta.get("stdout") else b""
    return Task(language="cpp" if path.suffix == ".cpp" else "python", source=path.read_text(),
                suite=TestSuite((StdioCase("1", b"", (expected,)),)), checker=CheckerSpec("tokens"),
                limits=Limits(cpu_seconds=_cpu(meta), memory_bytes=_memory_mb(meta) * MiB, output_bytes=OUTPUT))


@pytest.fixture(scope="module")
def server():
    s = LiveServer("--max-output-mb", "1")
    yield s
    assert s.stop() == 0


def _run_code_outcome(answer: dict, expected: bytes) -> str:
    if answer["run_result"] is None:
        return "CE"
    status = answer["run_result"]["arbiter"]["status_detail"]
    if status == "compile_error":
        return "CE"
    if status != "ok":
        return STATUS_OUTCOME[status]
    return "AC" if answer["run_result"]["stdout"].split() == expected.decode().split() else "WA"


def _next_request_is_normal(server) -> None:
    r = httpx.post(server.url + "/run_code", json={"code": "print(6*7)", "language": "python"}, timeout=120)
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "42\n"


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_hostile_program_same_verdict_through_the_server(server, path):
    task = hostile_task(path)
    with ThreadPoolExecutor(3) as pool:
        local = pool.submit(judge, task)
        native = pool.submit(httpx.post, server.url + "/v1/judge", json={"tasks": [task_to_json(task)]}, timeout=300)
        run = pool.submit(httpx.post, server.url + "/run_code", timeout=300,
                          json={"code": task.source, "language": task.language, "stdin": "",
                                "run_timeout": task.limits.cpu_seconds,
                                "memory_limit_MB": task.limits.memory_bytes // MiB})
        local, native, run = local.result(), native.result(), run.result()
    assert native.status_code == 200 and run.status_code == 200, (native.text[:300], run.text[:300])
    assert native.json()["verdicts"][0]["outcome"] == local.outcome.value, (local.reason, native.json()["verdicts"][0]["reason"])
    want = local.cases[0].outcome.value if local.cases else local.outcome.value
    assert _run_code_outcome(run.json(), task.suite.cases[0].expected[0]) == want, (local.reason, run.json()["message"])
    _next_request_is_normal(server)


def test_cheats_same_verdict_through_the_server(server):
    suites, header = _cheat_tasks()
    tasks = []
    for path in sorted((TESTS / "cheats").glob("*.py")):
        meta = header(path)
        tasks.append(Task("python", path.read_text(), suites[meta["task"]], checker=CheckerSpec("tokens"),
                          limits=Limits(cpu_seconds=2, output_bytes=OUTPUT), run_all=True))
    r = httpx.post(server.url + "/v1/judge", json={"tasks": [task_to_json(t) for t in tasks]}, timeout=600)
    assert r.status_code == 200
    with ThreadPoolExecutor(2) as pool:
        local = list(pool.map(judge, tasks))
    assert [v["outcome"] for v in r.json()["verdicts"]] == [v.outcome.value for v in local]
    for task, verdict in zip(tasks, local):  # stdin programs through /run_code too, case by case
        for case, res in zip(task.suite.cases, verdict.cases):
            if not isinstance(case, StdioCase):
                break
            a = httpx.post(server.url + "/run_code", timeout=120, json={
                "code": task.source, "language": "python", "stdin": case.stdin.decode(), "run_timeout": 2}).json()
            assert _run_code_outcome(a, case.expected[0]) == res.outcome.value, (task.task_id, case.name, a["message"])
    _next_request_is_normal(server)
