"""Issue 28 through ``arbiter score`` and ``arbiter score --ray local``: a stasher and a copier, a
page-cache filler and a memory hog, answering the same rows, are scored on the (per-node) warm
sandboxes one after another. Every copier and every hog scores 0 and every honest answer 1, on
both paths alike (the copier once scored 1.0 in 6 of 9 local runs and 4 of 9 Ray runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("ray")

from cluster.ray_rows import arbiter, fence  # noqa: E402
from session_pairs import PAIRS, PY_CACHE_FILLER, PY_HOG  # noqa: E402

ROWS = 4
#: (response, its score) in the order they are judged for each row.
RESPONSES = [
    (PAIRS["tcp_time_wait"][0], 1.0), (PAIRS["tcp_time_wait"][1], 0.0),
    (PAIRS["udp_snmp_counters"][0], 1.0), (PAIRS["udp_snmp_counters"][1], 0.0),
    (PY_CACHE_FILLER, 1.0), (PY_HOG, 0.0),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path, dict[str, float]]:
    work = tmp_path_factory.mktemp("ray_sessions")
    dataset, completions, expected = work / "rows.jsonl", work / "completions.jsonl", {}
    with open(dataset, "w") as rows, open(completions, "w") as comps:
        for r in range(ROWS):
            n = 21 + r  # one case per row (the counter pair holds one answer)
            gt = {"inputs": [f"{n}\n"], "outputs": [f"{2 * n}\n"]}
            rows.write(json.dumps({"data_source": "apps", "prompt": [{"role": "user", "content": "2n"}],
                                   "ability": "code", "extra_info": {"index": f"r{r}"},
                                   "reward_model": {"style": "rule", "ground_truth": json.dumps(gt)}}) + "\n")
            comps.write(json.dumps({"data_source": "apps", "index": f"r{r}",
                                    "responses": [fence(code) for code, _ in RESPONSES]}) + "\n")
            expected.update({f"apps:r{r}#{j}": score for j, (_, score) in enumerate(RESPONSES)})
    return dataset, completions, expected


def _verdicts(out: Path) -> dict[str, dict]:
    return {r["key"]: r for r in map(json.loads, (out / "verdicts.jsonl").read_text().splitlines())}


@pytest.mark.parametrize("where", [["--workers", "1"], ["--ray", "local"]], ids=["local", "ray"])
def test_copiers_and_hogs_score_zero(inputs, tmp_path, where):
    dataset, completions, expected = inputs
    out = tmp_path / "out"
    arbiter("score", "--dataset", str(dataset), "--completions", str(completions), "--out", str(out),
            "--quiet", "--time-limit", "10", "--memory-limit", "512", *where)
    got = _verdicts(out)
    wrong = {k: (got.get(k, {}).get("score"), v, got.get(k, {}).get("verdict"), got.get(k, {}).get("reason"),
                 got.get(k, {}).get("seconds"))
             for k, v in expected.items() if got.get(k, {}).get("score") != v}
    assert not wrong, wrong
