"""A lone surrogate (JSON ``"\\ud800"``: a reply cut inside an emoji's UTF-16 pair) never raises, on every door of
the reward: ``compute_score``, ``compute_score_batch``, ``arbiter score``, and ``arbiter serve``'s ``/run_code``,
``/v1/score`` and ``/v1/judge``. A program holding one cannot be read by any compiler: ``CE`` (its line and
column in the compile output); one outside the code block changes nothing. Real APPS rows and their reference
solutions; the real sandbox and a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from live_server import LiveServer

from arbiter.datasets.convert import convert
from arbiter.datasets.io import read_jsonl
from arbiter.datasets.verl_rows import iter_raw_rows
from arbiter.verl.reward import compute_score, compute_score_batch

REPO = Path(__file__).resolve().parents[2]
CUT = "\ud83d"  # the high half of 😀 (U+1F600) without its low half


@pytest.fixture(scope="module")
def apps(shared, tmp_path_factory) -> list[dict]:
    root = tmp_path_factory.mktemp("apps")
    convert("apps", shared / "realdata" / "coderl_apps", root / "apps.jsonl")
    return list(iter_raw_rows(root / "apps.jsonl"))[:3]


def responses(row: dict) -> dict[str, str]:
    """Each kind of response with a lone surrogate, and the verdict it must get."""
    ref = row["extra_info"]["reference_solutions"][0]
    return {"AC": f"```python\n{ref}\n```",
            "CE": f"```python\n{ref}\n# the answer {CUT}\n```",
            "CE:string": f"```python\nprint('{CUT}')\n{ref}\n```",
            "CE:low-half": f"```python\n{ref}\n# \udc00\n```",  # a low half below the surrogateescape range
            "AC:outside": f"Here it is {CUT}\n```python\n{ref}\n```\nDone {CUT}",
            "FORMAT_ERROR": f"I would write {CUT}"}


def test_compute_score_and_batch_never_raise(apps):
    row = apps[0]
    gt = row["reward_model"]["ground_truth"]
    cases = responses(row)
    for want, text in cases.items():
        r = compute_score(row["data_source"], text, gt, row["extra_info"])
        assert r["verdict"] == want.split(":")[0], (want, r)
    batch = compute_score_batch([row["data_source"]] * len(cases), list(cases.values()), [gt] * len(cases),
                                [row["extra_info"]] * len(cases))
    assert [r["verdict"] for r in batch] == [w.split(":")[0] for w in cases]


def test_a_row_prelude_with_a_lone_surrogate_is_that_rows_invalid_task(apps):
    """A row's ``extra_info.prelude`` holding one (red team, December 2026): the batch raised
    UnicodeEncodeError from the sandbox's load and every other row's result was lost."""
    row = apps[0]
    gt = row["reward_model"]["ground_truth"]
    ac = responses(row)["AC"]
    bad = dict(row["extra_info"], prelude=f"x = '{CUT}'\n")
    batch = compute_score_batch([row["data_source"]] * 3, [ac, ac + "\n", ac + "\n\n"], [gt] * 3,
                                [row["extra_info"], bad, row["extra_info"]], on_invalid="zero")
    assert [r["verdict"] for r in batch] == ["AC", "INVALID_TASK", "AC"], batch
    assert "prelude is not UTF-8" in batch[1]["reason"]


def test_arbiter_score_scores_every_response_and_resumes(apps, tmp_path):
    """Before: exit 2 after response #0, and again on every rerun (the run could never get past the row)."""
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in apps))
    comps, want = [], {}
    for r in apps:
        cases = responses(r)
        comps.append({"data_source": r["data_source"], "index": r["extra_info"]["index"],
                      "responses": list(cases.values())})
        want.update({f"{r['data_source']}:{r['extra_info']['index']}#{i}": w.split(":")[0]
                     for i, w in enumerate(cases)})
    completions = tmp_path / "comps.jsonl"
    completions.write_text("".join(json.dumps(c) + "\n" for c in comps))
    args = [sys.executable, "-m", "arbiter.cli.main", "score", "--dataset", str(dataset), "--completions",
            str(completions), "--out", str(tmp_path / "out")]
    r = subprocess.run(args, capture_output=True, text=True, cwd=REPO, timeout=600, env=dict(os.environ, COLUMNS="200"))
    assert r.returncode == 0, r.stdout + r.stderr
    got = {v["key"]: v["verdict"] for v in read_jsonl(tmp_path / "out" / "verdicts.jsonl")}
    assert got == want
    again = subprocess.run(args, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert again.returncode == 0 and len(list(read_jsonl(tmp_path / "out" / "verdicts.jsonl"))) == len(want)


@pytest.fixture(scope="module")
def server():
    s = LiveServer("--workers", "1")
    yield s
    assert s.stop() == 0


def post(server, path: str, body: dict) -> httpx.Response:
    return httpx.post(server.url + path, content=json.dumps(body), headers={"content-type": "application/json"},
                      timeout=300)


def test_run_code_takes_any_text(server):
    """Before: 500 for the program, 422 for stdin."""
    for language, code in (("python", f"print(1)  # {CUT}"), ("cpp", f"int main() {{ return 0; }} // {CUT}\n")):
        r = post(server, "/run_code", {"code": code, "language": language})
        assert r.status_code == 200, r.text
        a = r.json()
        assert a["status"] == "Failed" and "lone surrogate U+D83D at line 1" in a["message"], a
        assert "compile error: compile error" not in a["message"]
    r = post(server, "/run_code", {"code": "import sys; print(len(sys.stdin.buffer.read()))", "language": "python",
                                   "stdin": f"a{CUT}"})
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "4\n", r.text  # 'a' + 3 bytes
    r = post(server, "/run_code", {"code": "int main(){ nope }", "language": "cpp"})
    assert r.json()["message"].startswith("compile error: ") and "nope" in r.json()["message"], r.text


def test_v1_score_and_v1_judge_take_any_text(server, apps):
    row = apps[0]
    cases = responses(row)
    items = [{"data_source": row["data_source"], "solution_str": t, "ground_truth": row["reward_model"]["ground_truth"],
              "extra_info": row["extra_info"]} for t in cases.values()]
    r = post(server, "/v1/score", {"items": items})
    assert r.status_code == 200, r.text
    assert [x["verdict"] for x in r.json()["results"]] == [w.split(":")[0] for w in cases]
    task = {"language": "python", "source": f"print(input())  # {CUT}",
            "suite": {"cases": [{"kind": "stdio", "name": "1", "stdin": "1\n", "expected": ["1\n"]}]}}
    echo = {"language": "python", "source": "print(input())",
            "suite": {"cases": [{"kind": "stdio", "name": "1", "stdin": f"a{CUT}\n", "expected": [f"a{CUT}\n"]}]}}
    r = post(server, "/v1/judge", {"tasks": [task, echo]})
    assert r.status_code == 200, r.text
    ce, ac = r.json()["verdicts"]
    assert ce["outcome"] == "CE" and "U+D83D at line 1, column 19" in ce["compile_output"]
    assert ac["outcome"] == "AC"
