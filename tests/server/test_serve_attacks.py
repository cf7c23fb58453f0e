"""Requests that must not hurt ``arbiter serve`` (each failed on the service before the fair queue):
answers many times their data (one file under many spellings, a program's control bytes), limits
past the service's caps on every route and row option (422 naming the field), and client mistakes
answered as a 4xx naming them, never a retryable 5xx."""

from __future__ import annotations

import base64
import json

import httpx
import pytest
from live_server import LiveServer

from arbiter.judge.codec import task_to_json
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite

MIB = 1 << 20


@pytest.fixture(scope="module")
def server():
    s = LiveServer("--max-output-mb", "4")
    yield s
    assert s.stop() == 0


def post(server, path: str, body, **kw) -> httpx.Response:
    content = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx.post(server.url + path, content=content, headers={"Content-Type": "application/json"},
                      timeout=120, **kw)


# ---- 1. answers many times their data ------------------------------------------------------
def test_one_file_under_many_spellings_comes_back_once(server):
    data = bytes(range(256)) * (MIB // 256)  # 1 MiB
    spellings = ["big.bin"] + ["./" * k + "big.bin" for k in range(1, 30)] + ["/work/big.bin"]
    r = post(server, "/run_code", {"code": "print(1)", "language": "python",
                                   "files": {"big.bin": base64.b64encode(data).decode()}, "fetch_files": spellings})
    assert r.status_code == 200, r.text[:300]
    files = r.json()["files"]
    assert list(files) == ["big.bin"] and base64.b64decode(files["big.bin"]) == data
    assert len(r.content) < 1.34 * MIB + 4096  # one copy in base64, not 31


def test_fetched_files_share_one_budget(server):
    code = "for n in 'abc':\n    open(n + '.out', 'wb').write(b'x' * (3 << 20))\nprint('wrote')"
    r = post(server, "/run_code", {"code": code, "language": "python", "fetch_files": ["a.out", "b.out", "c.out"]})
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "wrote\n"
    a = r.json()
    assert list(a["files"]) == ["a.out"] and len(base64.b64decode(a["files"]["a.out"])) == 3 * MIB
    assert set(a["arbiter"]["files_omitted"]) == {"b.out", "c.out"}  # over the 4 MiB budget of the answer
    assert len(r.content) < 1.34 * 4 * MIB


def test_control_bytes_come_back_as_base64_not_six_times_their_size(server):
    code = "import sys\nsys.stdout.buffer.write(b'\\x01' * (3 << 20))"
    r = post(server, "/run_code", {"code": code, "language": "python"})
    assert r.status_code == 200
    run = r.json()["run_result"]
    assert base64.b64decode(run["arbiter"]["stdout_base64"]) == b"\x01" * (3 * MIB)
    assert run["stdout"].startswith("[arbiter:") and r.json()["status"] == "Success"
    assert len(r.content) < 1.34 * 3 * MIB + 4096  # \u0001 each would be 18 MiB


def test_text_output_stays_text(server):
    r = post(server, "/run_code", {"code": "print('héllo\\tworld ' * 2000)", "language": "python"})
    assert r.json()["run_result"]["stdout"] == "héllo\tworld " * 2000 + "\n"
    assert "stdout_base64" not in r.json()["run_result"]["arbiter"]


def test_fetch_outside_the_working_directory_is_422_naming_it(server):
    for path in ("/usr/lib/./os.py", "../x", "sub/x"):
        r = post(server, "/run_code", {"code": "print(1)", "language": "python", "fetch_files": ["ok", path]})
        assert r.status_code == 422 and "fetch_files[1]" in r.json()["message"], r.text


# ---- 2. every route and row option within the service's caps --------------------------------
def _task(**limits) -> dict:
    d = task_to_json(Task(language="python", source="print(1)", suite=TestSuite((StdioCase("1", b"", (b"1\n",)),))))
    d["limits"] = dict(d.get("limits", {}), output_bytes=MIB, **limits)
    return d


@pytest.mark.parametrize("field,value", [("wall_seconds", 140), ("processes", 400), ("processes", 1e9),
                                         ("scratch_bytes", 1 << 40), ("open_files", 1 << 20),
                                         ("stack_bytes", 1 << 40), ("cpu_seconds", 3600), ("stderr_bytes", 1 << 40),
                                         ("memory_bytes", 1 << 40), ("file_bytes", 1 << 40)])
def test_v1_judge_limits_past_the_caps_are_422_naming_the_field(server, field, value):
    r = post(server, "/v1/judge", {"tasks": [_task(), _task(**{field: value})]})
    assert r.status_code == 422 and f"tasks[1].limits.{field}" in r.json()["message"], r.text[:300]


def test_v1_score_suite_past_the_case_cap_is_422_as_on_v1_judge(server):
    """Red team (serve): an item of 50,000 cases was judged (200), its suite past the cap
    ``/v1/judge`` refuses: one unit as long as the client liked, holding a judge slot."""
    n = 10_001
    gt = json.dumps({"inputs": ["1\n"] * n, "outputs": ["1\n"] * n})
    ok = {"data_source": "codecontests", "solution_str": "```python\nprint(1)\n```",
          "ground_truth": json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]})}
    r = post(server, "/v1/score", {"items": [ok, dict(ok, ground_truth=gt)]})
    assert r.status_code == 422 and "items[1].ground_truth: 10001 cases; at most 10000" in r.json()["message"], r.text


def test_v1_judge_compile_timeout_past_the_cap_is_422(server):
    d = _task()
    d["compile"] = {"timeout_seconds": 3600}
    r = post(server, "/v1/judge", {"tasks": [d]})
    assert r.status_code == 422 and "tasks[0].compile.timeout_seconds" in r.json()["message"]


GT = json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]})


@pytest.mark.parametrize("options,extra,field", [
    ({"time_limit": 86400}, {}, "options.time_limit"),
    ({"memory_limit_mb": 1048576}, {}, "options.memory_limit_mb"),
    ({}, {"time_limit": 86400}, "items[0].extra_info.time_limit"),
])
def test_v1_score_options_and_row_limits_past_the_caps_are_422(server, options, extra, field):
    item = {"data_source": "apps", "solution_str": "```python\nprint(input())\n```", "ground_truth": GT,
            "extra_info": dict({"index": 0}, **extra)}
    r = post(server, "/v1/score", {"items": [item], "options": options})
    assert r.status_code == 422 and field in r.json()["message"], r.text[:300]


def test_run_code_limits_past_the_caps_are_422(server):
    for field, value in (("run_timeout", 10_000), ("compile_timeout", 10_000), ("memory_limit_MB", 1 << 30)):
        r = post(server, "/run_code", {"code": "print(1)", "language": "python", field: value})
        assert r.status_code == 422 and field in r.json()["message"]


# ---- 3. client mistakes are 4xx naming them ------------------------------------------------
def test_deeply_nested_json_is_422_not_500(server):
    deep = "[" * 100_000 + "]" * 100_000
    for path in ("/run_code", "/v1/judge", "/v1/score"):
        r = post(server, path, deep)
        assert r.status_code == 422 and "nested" in r.json()["message"], (path, r.status_code)


@pytest.mark.parametrize("name", ["a\0b", "x" * 256, "é" * 128])
def test_bad_file_names_are_422_not_a_retryable_504(server, name):
    r = post(server, "/run_code", {"code": "print(1)", "language": "python", "files": {name: ""}})
    assert r.status_code == 422 and "files[" in r.json()["message"], r.text[:200]


def test_lone_surrogate_in_code_is_the_programs_compile_error_not_a_5xx(server):
    """Code is a model's text: a reply cut inside an emoji's UTF-16 pair is not a program (the
    same as compute_score's CE, tests/rewards/test_lone_surrogates.py), never a 500."""
    raw = json.dumps({"code": "print(1)", "language": "python"}).replace('"code": "', '"code": "\\ud800', 1)
    r = post(server, "/run_code", raw)
    assert r.status_code == 200 and r.json()["status"] == "Failed", r.text[:200]
    assert "lone surrogate U+D800 at line 1" in r.json()["message"], r.text[:200]


def test_lone_surrogate_in_stdin_is_taken_as_its_bytes(server):
    raw = json.dumps({"code": "import sys; print(len(sys.stdin.buffer.read()))", "language": "python",
                      "stdin": "ab"}).replace('"stdin": "', '"stdin": "\\ud800', 1)
    r = post(server, "/run_code", raw)
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "5\n", r.text[:200]


def test_the_server_answers_normally_after_all_that(server):
    r = post(server, "/run_code", {"code": "print(6*7)", "language": "python"})
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "42\n"
    m = server.metrics()
    assert m.get('arbiter_request_seconds_count{route="/run_code"}', 0) > 0
