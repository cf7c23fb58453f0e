"""Reuse and failures first on real rows (bench/data/grpo: CodeScope, LeetCodeDataset and APPS
rows as ``arbiter convert`` writes them, with their references, CodeRL's generations, the
dataset's model answers and plausible bugs of them): a GRPO-like batch scored with reuse, the
failures-first order and the longest-first schedule on, and with all three off, gives the same
score to every response; exactly the responses repeating an earlier program of their row are
reused; the wrong responses run fewer cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.rewards.extract import extract_code
from arbiter.verl.reward import compute_score_batch

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[2] / "bench" / "data" / "grpo"
ROWS = ("codeforces:codescope_1", "codeforces:codescope_5", "codeforces:codescope_9", "codeforces:codescope_19",
        "codeforces:codescope_22", "codeforces:codescope_29", "apps:apps_train_0111", "apps:apps_train_0001",
        "leetcode:leetcode_count-substrings-that-can-be-rearranged-to-contain-a-string-i",
        "leetcode:leetcode_maximum-number-of-distinct-elements-after-operations")
OFF = {"reuse": False, "case_order": "suite", "schedule": "fifo"}
RUN = ("WA", "RE", "TLE", "MLE", "OLE")


@pytest.fixture(scope="module")
def batch() -> list[tuple]:
    rows = {}
    for line in (DATA / "rows.jsonl").read_text().splitlines():
        r = json.loads(line)
        rows[f"{r['data_source']}:{r['extra_info']['index']}"] = r
    out = []
    for line in (DATA / "candidates.jsonl").read_text().splitlines():
        c = json.loads(line)
        if c["key"] not in ROWS:
            continue
        r = rows[c["key"]]
        picked = [resp for resp, v in zip(c["responses"], c["verdicts"]) if v != "TLE"][:10]
        picked += [f"Let me write it again.\n\n{resp}\nThat is all." for resp in picked[:3]]  # repeats
        out += [(r["data_source"], resp, r["reward_model"]["ground_truth"], r["extra_info"]) for resp in picked]
    assert len(out) > 80
    return out


def _run(items, **kw) -> list[dict]:
    return compute_score_batch(*[list(x) for x in zip(*items)], **kw)


def test_scores_are_the_same_with_everything_on_and_off(batch):
    off = _run(batch, **OFF)
    on = _run(batch, workers=1)  # one at a time: each wrong response learns from all before it
    assert [r["score"] for r in on] == [r["score"] for r in off]
    assert [r["verdict"] == "AC" for r in on] == [r["verdict"] == "AC" for r in off]
    assert {r["verdict"] for r in off} >= {"AC", "WA", "RE"}
    # reuse: exactly the responses whose program repeats an earlier one of their row (after extraction)
    seen, repeats = set(), []
    for ds, resp, _, extra in batch:
        code = extract_code(resp).code
        key = (ds, extra["index"], code)
        repeats.append(code is not None and key in seen)
        seen.add(key)
    assert [r["cached"] for r in on] == repeats and sum(repeats) >= 30
    assert not any(r["cached"] for r in off)
    # failures first: the same wrong responses (repeats aside) run fewer cases than in the suite's order
    wrong = [i for i, r in enumerate(off) if r["verdict"] in RUN and not repeats[i]]
    ran_on, ran_off = (sum(res[i]["passed"] + 1 for i in wrong) for res in (on, off))
    print(f"\ncases run by {len(wrong)} wrong responses: {ran_on} failures first, {ran_off} in the suite's order")
    assert ran_on < ran_off
