"""A hostile or broken OpenAI-compatible endpoint (a real local HTTP server, tests/oracle_fake_server.py) cannot
crash, hang or exhaust ``arbiter sample`` or ``arbiter oracle generate``: per request every exception is caught and
recorded, each attempt has a total deadline and a size cap, malformed answers are asked again or recorded as
errors (never as samples), and the rest of the run is unaffected. Real prompts: APPS and LeetCode rows, the oracle
card's seed rows.

Before: choice indices mixing ``"1"`` and ``0`` made a ``sorted`` raise outside the request's error handling (exit
1, 0 records, every in-flight sample lost); a lone surrogate in ``content`` aborted the run (exit 2, 0 records);
``"choices": {"0": 1}`` became empty samples; a body dripped one byte a second kept an attempt alive far past
``--timeout`` (a per-read timeout); 100 MB choices were written to the output; an endless body grew the
client's memory without bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from oracle_fake_server import FakeOpenAIServer, Script, choice, completion_bytes, endless, huge_choices  # noqa: E402

from arbiter.datasets.convert import convert
from arbiter.datasets.io import read_jsonl
from arbiter.datasets.oracle import load_seeds
from arbiter.datasets.verl_rows import iter_raw_rows

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data/oracle"
CUT = "\ud83d"  # half of an emoji's UTF-16 pair
DRIPPED = completion_bytes([choice(i, "```python\nprint(1)\n```") for i in range(4)])


def arbiter(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run([sys.executable, "-m", "arbiter.cli.main", *args], capture_output=True, text=True,
                          cwd=REPO, env=dict(env, COLUMNS="200"), timeout=600)


def hostile(n_content: str) -> dict[str, dict]:
    """Script fields per behaviour (``n_content``: the text of a good answer)."""
    return {
        "good": {"completions": [n_content]},
        "mixed_indices": {"raw": lambda n, k: completion_bytes([choice("1", n_content), choice(0, n_content)])},
        "mixed_once": {"raw": lambda n, k: completion_bytes([choice("1", n_content), choice(0, n_content)]),
                       "raw_first": 1, "completions": [n_content]},
        "lone_surrogate": {"raw": lambda n, k: completion_bytes([choice(i, n_content.replace("print(1)", f"print(1)  # {CUT}")
                                                                        .replace("return 0;", f"return 0; // {CUT}"))
                                                                 for i in range(n)])},
        "choices_dict": {"raw": lambda n, k: completion_bytes({"0": 1})},
        "drip": {"raw": lambda n, k: DRIPPED, "drip": 1.0},
        "endless": {"raw": endless()},
        "huge": {"raw": huge_choices(100)},
    }


@pytest.fixture(scope="module")
def prompts(shared, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("prompts")
    rows = []
    for source, path in (("apps", "coderl_apps"), ("leetcode", "leetcodedataset/LeetCodeDataset-v0.3.1-test.jsonl.gz")):
        convert(source, shared / "realdata" / path, root / f"{source}.jsonl")
        rows += list(iter_raw_rows(root / f"{source}.jsonl"))[:5]
    dataset = root / "rows.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows[:len(hostile(""))]))
    return dataset


def _matcher(text: str):
    return lambda messages: any(m.get("content") == text for m in messages)


def test_sample_survives_every_misbehaviour_and_records_each(prompts, tmp_path):
    rows = list(iter_raw_rows(prompts))
    behaviours = hostile("```python\nprint(1)\n```")
    assert len(rows) == len(behaviours)
    key = {name: f"{r['data_source']}:{r['extra_info']['index']}" for name, r in zip(behaviours, rows)}
    scripts = [Script(name, _matcher(r["prompt"][-1]["content"]), **fields)
               for (name, fields), r in zip(behaviours.items(), rows)]
    out = tmp_path / "c.jsonl"
    args = ["sample", "--dataset", str(prompts), "--model", "fake-model", "--out", str(out), "--n", "4", "--quiet",
            "--timeout", "3", "--max-retries", "1", "--max-response-mb", "4"]
    with FakeOpenAIServer(scripts) as srv:
        r = arbiter(*args, "--base-url", srv.base_url)
        asked = {s.name: s.requests for s in srv.scripts}
        sent = list(srv.sent)
    assert r.returncode == 3, r.stdout + r.stderr  # samples missing: rerun; never 1 (a crash) or 2
    assert "Traceback" not in r.stderr
    got = Counter()
    texts = {}
    for rec in read_jsonl(out):
        got[rec["key"]] += len(rec["responses"])
        texts.setdefault(rec["key"], []).extend(rec["responses"])
    assert got == {key["good"]: 4, key["mixed_once"]: 4, key["lone_surrogate"]: 4}
    assert all(t == f"```python\nprint(1)  # {CUT}\n```" for t in texts[key["lone_surrogate"]])  # kept, escaped
    assert out.read_bytes().isascii() or b"\\ud83d" in out.read_bytes()
    errors = {e["key"]: e for e in read_jsonl(tmp_path / "c.errors.jsonl")}
    assert set(errors) == {key[k] for k in ("mixed_indices", "choices_dict", "drip", "endless", "huge")}
    for name, error, attempts in (("mixed_indices", "MalformedAnswer", 2), ("choices_dict", "MalformedAnswer", 2),
                                  ("drip", "APITimeoutError", 2), ("endless", "ResponseTooLarge", 1),
                                  ("huge", "ResponseTooLarge", 1)):
        e = errors[key[name]]
        assert (e["error"], e["attempts"], e["sample_indices"]) == (error, attempts, [0, 1, 2, 3]), e
    assert "deadline" in errors[key["drip"]]["message"] and "size cap" in errors[key["huge"]]["message"]
    assert asked["mixed_once"] == 2 and asked["drip"] == 2 and asked["endless"] == 1 and asked["huge"] == 1
    dripped = [n for name, n in sent if name == "drip"]
    assert len(dripped) == 2 and all(n < len(DRIPPED) for n in dripped)  # each attempt was cut at its deadline
    assert not out.with_name(out.name + ".lock").exists()
    assert "20 samples are missing" in r.stderr
    # a rerun asks only for what is missing; the good rows are not asked again
    with FakeOpenAIServer(scripts) as srv:
        again = arbiter(*args, "--base-url", srv.base_url)
        asked_again = {s.name for s in srv.scripts if s.requests > asked[s.name]}
    assert again.returncode == 3 and asked_again == {"mixed_indices", "choices_dict", "drip", "endless", "huge"}
    # the sample with a lone surrogate is scored like any other: its program is CE, nothing raises
    score = arbiter("score", "--dataset", str(prompts), "--completions", str(out), "--out", str(tmp_path / "s"), "--quiet")
    assert score.returncode == 0, score.stdout + score.stderr
    verdicts = Counter(v["verdict"] for v in read_jsonl(tmp_path / "s" / "verdicts.jsonl") if v["key"].startswith(
        key["lone_surrogate"] + "#"))
    assert verdicts == {"CE": 4}


def test_sample_counts_n_refusals_apart_from_failures(prompts, tmp_path):
    """A server without ``n``: the first requests of the rows in flight are refused (400) and asked again one
    sample at a time. Before: "8 failed; the server took no n" while every sample arrived."""
    out = tmp_path / "c.jsonl"
    with FakeOpenAIServer([Script("all", lambda m: True, completions=["```python\nprint(1)\n```"])],
                          supports_n=False) as srv:
        r = arbiter("sample", "--dataset", str(prompts), "--model", "fake-model", "--base-url", srv.base_url,
                    "--out", str(out), "--n", "3", "--concurrency", "8", "--quiet")
        refused = sum(1 for e in srv.log if e.status == 400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert refused >= 1 and sum(len(x["responses"]) for x in read_jsonl(out)) == 3 * len(hostile(""))
    assert "0 given up on" in r.stderr and f"{refused} request(s) with n refused" in r.stderr
    assert "failed" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]  # no lock file, no empty errors file


def test_oracle_generate_survives_every_misbehaviour(tmp_path):
    seeds = load_seeds(DATA / "seeds.jsonl").rows
    good = next(json.loads(l) for l in (DATA / "returns.jsonl").read_text().splitlines()
                if '"demo_id": "good-0002"' in l)
    answer = good["messages"][-1]["content"]
    behaviours = hostile(answer)
    order = ["lone_surrogate", "good", "mixed_indices", "choices_dict", "drip"]  # good-0002 answers seed 2
    scripts = []
    for name, seed in zip(order, seeds):
        fields = dict(behaviours[name])
        want = [{"role": m.role, "content": m.content} for m in seed.messages]
        scripts.append(Script(name, lambda ms, want=want: [{"role": m.get("role"), "content": m.get("content")}
                                                            for m in ms] == want, **fields))
    out = tmp_path / "gen"
    with FakeOpenAIServer(scripts) as srv:
        r = arbiter("oracle", "generate", "--seeds", str(DATA / "seeds.jsonl"), "--out", str(out), "--model",
                    "fake-model", "--base-url", srv.base_url, "--n", "1", "--timeout", "3", "--max-retries", "1",
                    "--quiet", "--no-rows", "--measure-cases", "1")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    by_task = {seed.task_id: name for name, seed in zip(order, seeds)}
    written = {row["task_id"]: row for row in read_jsonl(out / "returns.jsonl")}
    assert {by_task[t] for t in written} == {"good", "lone_surrogate"}
    errors = {e["task_id"]: e["error"] for e in read_jsonl(out / "returns.errors.jsonl")}
    assert {by_task[t]: e for t, e in errors.items()} == {"mixed_indices": "MalformedAnswer",
                                                          "choices_dict": "MalformedAnswer", "drip": "APITimeoutError"}
    verified = [v["task_id"] for v in read_jsonl(out / "verified.jsonl")]
    rejected = {v["task_id"]: v for v in read_jsonl(out / "rejected.jsonl") if v["kind"] == "return"}
    assert [by_task[t] for t in verified] == ["good"]
    assert [by_task[t] for t in rejected] == ["lone_surrogate"]
    (bad,) = rejected.values()
    assert bad["stage"] == "compile" and [x["code"] for x in bad["reasons"]] == ["CE"]
    assert "lone surrogate U+D83D" in json.dumps(bad)
