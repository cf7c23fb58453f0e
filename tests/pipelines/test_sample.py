"""``arbiter sample`` against a real local OpenAI-compatible server (tests/oracle_fake_server.py) through the real
CLI: resume after SIGKILL without duplicates, every completion despite 429/500 answers, a server without ``n``,
and a clear exit for a bad endpoint or model name before anything is asked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from oracle_fake_server import FakeOpenAIServer, Script  # noqa: E402

from arbiter.datasets.io import read_jsonl
from arbiter.pipelines.codegen.inputs import load_inputs


def _rows(path: Path, k: int) -> Path:
    path.write_text("".join(json.dumps({
        "data_source": "taco" if i % 2 else "apps", "prompt": [{"role": "user", "content": f"problem {i // 2}"}],
        "ability": "code", "reward_model": {"style": "rule", "ground_truth": json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]})},
        "extra_info": {"index": str(i // 2)}}) + "\n" for i in range(k)))  # indexes collide across data sources
    return path


def _cmd(base_url: str, dataset: Path, out: Path, *extra: str, model: str = "weak") -> list[str]:
    return [sys.executable, "-m", "arbiter.cli.main", "sample", "--dataset", str(dataset), "--model", model,
            "--base-url", base_url, "--out", str(out), "--quiet", *extra]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}  # the key is optional


def _samples(out: Path) -> Counter:
    return Counter((r["key"], i) for r in read_jsonl(out) for i in r["sample_indices"])


def test_sigkill_then_rerun_completes_without_duplicates(tmp_path):
    dataset, out = _rows(tmp_path / "rows.jsonl", 12), tmp_path / "completions.jsonl"
    script = Script("all", "problem", completions=[f"```python\nprint({i})\n```" for i in range(4)], delay=0.15,
                    model="weak")
    with FakeOpenAIServer([script], models=["weak"], supports_n=False) as srv:
        proc = subprocess.Popen(_cmd(srv.base_url, dataset, out, "--n", "4", "--concurrency", "2"), env=_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while (not out.exists() or len(out.read_bytes().splitlines()) < 5) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        first = _samples(out)
        assert 5 <= sum(first.values()) < 48
        rerun = subprocess.run(_cmd(srv.base_url, dataset, out, "--n", "4", "--concurrency", "2"), env=_env(),
                               capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    got = _samples(out)
    assert set(got.values()) == {1} and len(got) == 48
    assert {k for k, _ in got} == {f"{ds}:{i}" for ds in ("apps", "taco") for i in range(6)}
    inputs = load_inputs(dataset, out)  # what arbiter score reads
    assert inputs.responses == 48 and inputs.problems.count == 0


def test_429_and_500_some_of_the_time_still_yield_every_completion(tmp_path):
    dataset, out = _rows(tmp_path / "rows.jsonl", 10), tmp_path / "c.jsonl"
    script = Script("flaky", "problem", completions=["a", "b", "c"], fail_first=2, fail_every=3,
                    fail_status=[429, 500], retry_after=0.01, model="weak")
    with FakeOpenAIServer([script], models=["weak", "strong"]) as srv:
        r = subprocess.run(_cmd(srv.base_url, dataset, out, "--n", "3", "--concurrency", "3", "--temperature", "0.6",
                                "--seed", "5", "--max-tokens", "64"), env=_env(), capture_output=True, text=True)
        statuses = Counter(e.status for e in srv.log)
    assert r.returncode == 0, r.stderr
    assert statuses[429] and statuses[500] and statuses[200] == 10
    records = list(read_jsonl(out))
    assert len(records) == 10 and all(rec["responses"] == ["a", "b", "c"] for rec in records)
    rec = records[0]
    assert rec["sampling"] == {"temperature": 0.6, "top_p": None, "max_tokens": 64, "seed": 5, "n": 3}
    assert rec["finish_reasons"] == ["stop"] * 3 and rec["usage"]["completion_tokens"] == 30
    assert rec["model"] == "weak"


def test_bad_endpoint_or_model_exits_before_the_run(tmp_path):
    dataset, out = _rows(tmp_path / "rows.jsonl", 2), tmp_path / "c.jsonl"
    with FakeOpenAIServer([Script("s", "problem", completions=["x"])], models=["weak"]) as srv:
        r = subprocess.run(_cmd(srv.base_url, dataset, out, model="nope"), env=_env(), capture_output=True, text=True)
        assert r.returncode == 2 and "'nope' is not served" in r.stderr and "weak" in r.stderr
        assert not [e for e in srv.log]
    r = subprocess.run(_cmd("http://127.0.0.1:9/v1", dataset, out, "--max-retries", "0"), env=_env(),
                       capture_output=True, text=True)
    assert r.returncode == 2 and "cannot reach" in r.stderr
    assert not out.exists()
