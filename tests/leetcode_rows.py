"""LeetCodeDataset-format rows for tests of the node types (``tests/datasets/test_leetcode_nodes.py``,
``tests/judge/test_redteam10_call_mode.py``): the dataset's real preamble and a row built around a
``starter_code`` signature, as ``arbiter convert --from leetcode`` reads them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path


def dataset_prompt(shared: Path) -> str:
    """The real LeetCodeDataset preamble (``ListNode``, ``TreeNode``, ``tree_node``...)."""
    with gzip.open(shared / "realdata" / "leetcodedataset" / "LeetCodeDataset-v0.3.1-test.jsonl.gz", "rt") as f:
        prompt = json.loads(f.readline())["prompt"]
    assert "def tree_node(" in prompt and "class ListNode" in prompt
    return prompt


def lc_row(task_id: str, signature: str, entry: str, pairs: list[tuple[str, str]], prompt: str) -> dict:
    """A LeetCodeDataset-format row (its ``starter_code`` annotated as the dataset's are)."""
    return {"task_id": task_id, "question_id": 1, "difficulty": "Easy", "tags": [], "estimated_date": "2015-05-04",
            "problem_description": f"Solve {task_id}.",
            "starter_code": f"class Solution:\n    def {signature}:\n        ", "prompt": prompt, "completion": "",
            "entry_point": f"Solution().{entry}", "test": "", "query": f"Solve {task_id}.", "response": "",
            "input_output": [{"input": i, "output": o} for i, o in pairs]}


def converted_rows(raw: list[dict], folder: Path, out_name: str = "rows.jsonl") -> dict:
    """``raw`` rows as ``arbiter convert --from leetcode`` writes them, by ``extra_info.index``."""
    from typer.testing import CliRunner

    from arbiter.cli.main import app
    from arbiter.datasets.verl_rows import iter_rows

    src, out = folder / "lc.jsonl", folder / out_name
    src.write_text("".join(json.dumps(r) + "\n" for r in raw))
    result = CliRunner().invoke(app, ["convert", "--from", "leetcode", str(src), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return {r.extra_info["index"]: r for r in iter_rows(out)}
