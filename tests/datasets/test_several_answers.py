"""`arbiter convert` flags real rows whose statement accepts several answers ("in any order",
"return any of them") under tests that compare with one answer; verdicts are not changed."""

from __future__ import annotations

import gzip
import json

from typer.testing import CliRunner

from arbiter.cli.main import app
from arbiter.datasets.several_answers import SEVERAL_ANSWERS
from arbiter.datasets.verl_rows import iter_rows
from arbiter.verl.reward import compute_score

FLAGGED = {
    "the-two-sneaky-numbers-of-digitville": "(in any order)",
    "find-indices-of-stable-mountains": "in any order",
    "construct-2d-grid-matching-graph-layout": "return any of them",
}
PLAIN = "adjacent-increasing-subarrays-detection-i"  # one answer: no note
SNEAKY_SORTED = ("class Solution:\n    def getSneakyNumbers(self, nums: List[int]) -> List[int]:\n"
                 "        cnt = Counter(nums)\n        return sorted(x for x, v in cnt.items() if v == 2)\n")


def test_leetcode_rows_whose_statement_accepts_any_order_are_noted_and_reported(shared, tmp_path):
    src = shared / "realdata" / "leetcodedataset" / "LeetCodeDataset-v0.3.1-test.jsonl.gz"
    wanted = [*FLAGGED, PLAIN]
    with gzip.open(src, "rt", encoding="utf-8") as f:
        raw = [rec for rec in map(json.loads, f) if rec["task_id"] in wanted]
    subset = tmp_path / "lc.jsonl"
    subset.write_text("".join(json.dumps(rec) + "\n" for rec in raw))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["convert", "--from", "leetcode", str(subset), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "3 with warnings" in result.output and SEVERAL_ANSWERS in result.output, result.output
    rows = {r.extra_info["index"].removeprefix("leetcode_"): r for r in iter_rows(out)}
    assert set(rows) == set(wanted)
    for task_id, phrase in FLAGGED.items():
        notes = [n for n in rows[task_id].extra_info["notes"] if n.startswith(SEVERAL_ANSWERS)]
        assert len(notes) == 1 and phrase in notes[0] and "judged WA" in notes[0], notes
    assert not any(n.startswith(SEVERAL_ANSWERS) for n in rows[PLAIN].extra_info["notes"])
    # the note is a warning only: the same correct answer in another order is still WA
    row = rows["the-two-sneaky-numbers-of-digitville"]
    r = compute_score(row.data_source, f"```python\n{SNEAKY_SORTED}```", row.ground_truth, row.extra_info)
    assert r["verdict"] == "WA", r
