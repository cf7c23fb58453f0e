"""``arbiter serve`` driven for real: the official ``sandbox-fusion`` client on ``/run_code``, the
native ``/v1/judge`` (one codec with ``arbiter judge --json``) and ``/v1/score`` (NDJSON too),
``/healthz`` and ``/metrics``; the arbiter client and ``compute_score(url=...)``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from live_server import LiveServer

from arbiter.client import AsyncClient, Client, ServerError
from arbiter.judge.codec import task_to_json, verdict_to_json
from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.rewards.codegen import InvalidTask
from arbiter.verl.reward import compute_score, compute_score_batch

sandbox_fusion = pytest.importorskip("sandbox_fusion", reason="the official client: pip install 'arbiter[serve-test]'")
RunCodeRequest, RunStatus = sandbox_fusion.RunCodeRequest, sandbox_fusion.RunStatus
run_code, run_code_async = sandbox_fusion.run_code, sandbox_fusion.run_code_async


@pytest.fixture(scope="module")
def server():
    s = LiveServer()
    yield s
    assert s.stop() == 0


def sf(server, **kw):
    return run_code(RunCodeRequest(**kw), endpoint=server.url, max_attempts=1)


def test_official_client_python_success(server):
    r = sf(server, code="print(input()[::-1])", language="python", stdin="abc\n")
    assert r.status == RunStatus.Success and r.run_result.stdout == "cba\n" and r.run_result.return_code == 0
    assert r.compile_result is None


def test_official_client_cpp_compile_and_run(server):
    r = sf(server, code="#include <cstdio>\nint main(){int a,b;scanf(\"%d %d\",&a,&b);printf(\"%d\\n\",a+b);}",
           language="cpp", stdin="2 3")
    assert r.status == RunStatus.Success and r.run_result.stdout == "5\n"
    assert r.compile_result.status == "Finished" and r.compile_result.return_code == 0


def test_compile_error_is_failed_with_no_run(server):
    r = sf(server, code="int main(){ nope }", language="cpp")
    assert r.status == RunStatus.Failed and r.run_result is None
    assert r.compile_result.return_code != 0 and "nope" in r.compile_result.stderr


def test_python_syntax_error_exits_1(server):
    r = sf(server, code="def f(:\n", language="python")
    assert r.status == RunStatus.Failed and r.run_result.return_code == 1 and "SyntaxError" in r.run_result.stderr


def test_runtime_error_and_timeout(server):
    r = sf(server, code="import sys\nprint('partial')\nsys.exit(3)", language="python")
    assert r.status == RunStatus.Failed and r.run_result.return_code == 3 and r.run_result.stdout == "partial\n"
    r = sf(server, code="print('so far', flush=True)\nwhile True: pass", language="python", run_timeout=0.5)
    assert r.status == RunStatus.Failed and r.run_result.status == "TimeLimitExceeded"
    assert r.run_result.return_code is None and r.run_result.stdout == "so far\n"


def test_files_in_and_out(server):
    import base64

    r = sf(server, code="print(open('data.txt').read().strip())", language="python",
           files={"data.txt": base64.b64encode(b"42\n").decode()}, fetch_files=["data.txt"])
    assert r.status == RunStatus.Success and r.run_result.stdout == "42\n"
    assert base64.b64decode(r.files["data.txt"]) == b"42\n"


def test_unsupported_language_names_the_supported_ones(server):
    before = server.metrics()
    r = httpx.post(server.url + "/run_code", json={"code": "fmt.Println(1)", "language": "go"}, timeout=60).json()
    assert r["status"] == "SandboxError" and "python" in r["message"] and "cpp" in r["message"]
    after = server.metrics()

    def delta(name: str) -> float:
        return after.get(name, 0) - before.get(name, 0)

    # SandboxFusion's SandboxError ("not run") has a metric of its own; arbiter's verdicts and its own
    # SANDBOX_ERROR count are untouched (they shared one label, and an alert on one read the other)
    assert delta('arbiter_run_code_total{status="SandboxError",tenant="anonymous"}') == 1
    assert delta("arbiter_sandbox_errors_total") == 0
    assert not any(k.startswith("arbiter_verdicts_total") and delta(k) for k in after)
    assert not any("SandboxError" in k or "Success" in k for k in after if k.startswith("arbiter_verdicts_total"))
    with pytest.raises(Exception, match="not supported"):  # the official client raises, it never scores it
        sf(server, code="x", language="go")


def test_async_official_client(server):
    async def go():
        return await asyncio.gather(*(run_code_async(RunCodeRequest(code=f"print({i}*2)", language="python"),
                                                     endpoint=server.url, max_attempts=1) for i in range(4)))

    assert [r.run_result.stdout for r in asyncio.run(go())] == [f"{i * 2}\n" for i in range(4)]


def _task(source: str, cases: list[tuple[str, str]], **kw) -> Task:
    return Task(language="python", source=source, task_id="t",
                suite=TestSuite(tuple(StdioCase(str(i), a.encode(), (b.encode(),)) for i, (a, b) in enumerate(cases))),
                **kw)


def test_v1_judge_matches_in_process_judge_and_the_cli_shape(server, tmp_path):
    tasks = [_task("print(int(input())*2)", [("1", "2"), ("5", "10")]),
             _task("print(int(input())+1)", [("1", "2"), ("5", "10")], scoring="fraction", run_all=True)]
    with Client(server.url) as client:
        remote = client.judge(tasks)
    local = [judge(t) for t in tasks]
    assert [(v.outcome, v.score, v.passed, [c.outcome for c in v.cases]) for v in remote] == \
           [(v.outcome, v.score, v.passed, [c.outcome for c in v.cases]) for v in local]
    assert remote[1].score == 0.5
    prog, tests = tmp_path / "p.py", tmp_path / "t.json"
    prog.write_text(tasks[0].source)
    tests.write_text(json.dumps({"inputs": ["1", "5"], "outputs": ["2", "10"]}))
    cli = subprocess.run([str(Path(sys.executable).with_name("arbiter")), "judge", str(prog), "--lang", "python",
                          "--tests", str(tests), "--json"], capture_output=True, text=True)
    raw = httpx.post(server.url + "/v1/judge", json={"tasks": [task_to_json(tasks[0])]}, timeout=120).json()
    assert list(json.loads(cli.stdout)) == list(raw["verdicts"][0]) == list(verdict_to_json(local[0]))


def test_v1_judge_streams_ndjson(server):
    tasks = [_task(f"print({i})", [("", str(i))]) for i in range(6)]
    with httpx.stream("POST", server.url + "/v1/judge?stream=1", json={"tasks": [task_to_json(t) for t in tasks]},
                      timeout=120) as r:
        assert r.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(x) for x in r.iter_lines() if x]
    assert sorted(d["index"] for d in lines) == list(range(6))
    assert all(d["verdict"]["outcome"] == "AC" for d in lines)


GT = json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["2\n", "4\n"]})
ITEMS = [("apps", "```python\nprint(int(input())*2)\n```", GT, {"index": 0}),
         ("apps", "```python\nprint(int(input())+1)\n```", GT, {"index": 1}),
         ("apps", "no code here", GT, {"index": 2})]


def test_compute_score_url_matches_in_process(server):
    keys = ("score", "verdict", "passed", "total")
    local = [compute_score(*it) for it in ITEMS]
    remote = [compute_score(*it, url=server.url) for it in ITEMS]
    assert [[r[k] for k in keys] for r in remote] == [[r[k] for k in keys] for r in local]
    assert remote[0][0] == 1.0 and remote[1]["verdict"] == "WA"
    batch = compute_score_batch(*zip(*ITEMS), url=server.url)
    assert [[r[k] for k in keys] for r in batch] == [[r[k] for k in keys] for r in local]


def test_compute_score_url_raises_what_in_process_raises(server):
    bad = ("apps", "```python\nprint(1)\n```", json.dumps({"inputs": [], "outputs": []}), {"index": 9})
    with pytest.raises(InvalidTask):
        compute_score(*bad)
    with pytest.raises(InvalidTask):
        compute_score(*bad, url=server.url)
    with pytest.raises(ValueError):
        compute_score("gsm8k", "x", "1", url=server.url)
    with pytest.raises(TypeError):
        compute_score(*ITEMS[0], url=server.url, no_such_option=1)
    items = [{"data_source": "gsm8k", "solution_str": "x", "ground_truth": "1", "extra_info": {"index": 4}},
             dict(zip(("data_source", "solution_str", "ground_truth", "extra_info"), bad))]
    answer = httpx.post(server.url + "/v1/score", json={"items": items}, timeout=60).json()["results"]
    assert [(r["type"], r["row"]) for r in answer] == [("ValueError", "gsm8k:4"), ("InvalidTask", "apps:9")]
    assert "not a code-execution source" in answer[0]["reason"] and "zero test cases" in answer[1]["reason"]


def test_async_client_scores(server):
    async def go():
        c = AsyncClient(server.url)
        try:
            return await c.score(ITEMS[:2])
        finally:
            await c.aclose()

    assert [r["verdict"] for r in asyncio.run(go())] == ["AC", "WA"]


def test_healthz_is_the_doctor_and_metrics_count(server):
    h = httpx.get(server.url + "/healthz", timeout=120)
    assert h.status_code == 200 and h.json()["isolated"] is True and h.json()["checks"]
    m = server.metrics()
    assert m["arbiter_cases_total"] > 0 and 'arbiter_verdicts_total{tenant="anonymous",verdict="AC"}' in m
    assert any(k.startswith("arbiter_request_seconds_bucket") for k in m)


def _cases_total(server) -> float:
    return server.metrics()["arbiter_cases_total"]


def test_cases_total_counts_the_cases_run_through_every_door(server):
    """A program wrong on case 0 of 5 (all-or-nothing stops there: 4 cases SKIPPED) adds 1 to
    ``arbiter_cases_total`` through ``/v1/score`` and ``/v1/judge`` alike; ``/run_code`` adds 1
    for a run, 0 for a compile error."""
    gt = json.dumps({"inputs": [f"{i}\n" for i in range(5)], "outputs": [f"{i + 1}\n" for i in range(5)]})
    before = _cases_total(server)
    with Client(server.url) as client:
        scored = client.score([("apps", "```python\nprint(0)  # score door\n```", gt, {"index": 0})])[0]
        assert (scored["verdict"], scored["total"]) == ("WA", 5)
        after_score = _cases_total(server)
        judged = client.judge([_task("print(0)  # judge door", [(str(i), str(i + 1)) for i in range(5)])])[0]
    assert [c.outcome.value for c in judged.cases].count("SKIPPED") == 4
    after_judge = _cases_total(server)
    assert sf(server, code="print('run_code door')", language="python").status == RunStatus.Success
    after_run = _cases_total(server)
    assert sf(server, code="int main(){ nope; }", language="cpp").status == RunStatus.Failed
    assert (after_score - before, after_judge - after_score, after_run - after_judge,
            _cases_total(server) - after_run) == (1, 1, 1, 0)


def test_bad_request_is_422_and_not_retried(server):
    with Client(server.url, attempts=3) as c, pytest.raises(ServerError) as err:
        c.post("/v1/judge", {"tasks": [{"language": "python"}]})
    assert err.value.status == 422 and "tasks[0]" in str(err.value)


# ---- SandboxFusion parity: /v1/ping, wall-time run_timeout, files the program writes, /run_jupyter
def test_v1_ping(server):
    r = httpx.get(server.url + "/v1/ping", timeout=30)
    assert r.status_code == 200 and r.json() == "pong"


def test_run_timeout_is_wall_time_as_sandboxfusion(server):
    r = sf(server, code="import time\ntime.sleep(3)\nprint('woke')", language="python", run_timeout=1)
    assert r.status == RunStatus.Failed and r.run_result.status == "TimeLimitExceeded"
    assert r.run_result.execution_time < 2.5  # stopped at the 1 s wall limit, not 2 x 1 + 1


def test_files_the_program_writes_come_back(server):
    import base64

    code = "open('out.txt', 'w').write('written by the program')\nprint('ok')"
    r = sf(server, code=code, language="python", fetch_files=["out.txt", "./out.txt", "missing.txt"])
    assert r.status == RunStatus.Success and base64.b64decode(r.files["out.txt"]) == b"written by the program"
    assert set(r.files) == {"out.txt"}
    code = '#include <cstdio>\nint main(){FILE*f=fopen("o.bin","wb");fputs("cpp",f);fclose(f);}'
    r = sf(server, code=code, language="cpp", fetch_files=["o.bin"])
    assert r.status == RunStatus.Success and base64.b64decode(r.files["o.bin"]) == b"cpp"


def test_official_client_run_jupyter(server):
    req = sandbox_fusion.RunJupyterRequest(cells=["a = 123", "a", "print(a)", "import sys; sys.stderr.write('err')",
                                                  "raise RuntimeError('boom')", "a + 1"])
    r = sandbox_fusion.run_jupyter(req, endpoint=server.url, max_attempts=1)
    assert r.status == RunStatus.Success
    cells = r.cells
    assert cells[1].display == [{"text/plain": "123"}] and cells[2].stdout == "123\n" and cells[3].stderr == "err"
    assert cells[4].error[0]["ename"] == "RuntimeError" and cells[5].display == [{"text/plain": "124"}]
    r = sandbox_fusion.run_jupyter(sandbox_fusion.RunJupyterRequest(cells=["while True: pass"], total_timeout=1),
                                   endpoint=server.url, max_attempts=1)
    assert r.status == RunStatus.Failed and r.driver.status == "TimeLimitExceeded"
    # a cell that writes over the driver's report (the marker is readable from the cell) fails the notebook: an
    # answer, not a 500 (red team, serve)
    forge = ("import sys, os\nmark = [c for c in sys._getframe(1).f_code.co_consts if isinstance(c, str) and "
             "c.startswith('@@arbiter-cells-')][0]\nos.write(1, ('\\n%s\\n{not json\\n' % mark).encode())\n"
             "os._exit(0)\n")
    for tail in ("{not json", "[1, 2]"):
        cell = forge.replace("{not json", tail)
        r = sandbox_fusion.run_jupyter(sandbox_fusion.RunJupyterRequest(cells=[cell]), endpoint=server.url,
                                       max_attempts=1)
        assert r.status == RunStatus.Failed and "could not be read" in r.message, r
