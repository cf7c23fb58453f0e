"""Rebuild this folder's bench data from ../shared/realdata (provenance; bench/score.py only reads
rows.jsonl and completions.jsonl). Run from the repository root:

    .venv/bin/python bench/data/codegen/make.py ../shared/realdata
"""

from __future__ import annotations

import ast
import gzip
import json
import sys
import tempfile
from pathlib import Path

from arbiter.datasets.convert import convert
from arbiter.datasets.verl_rows import iter_rows

HERE = Path(__file__).resolve().parent
LEETCODE_EVERY = 9  # every 9th LeetCodeDataset row: 17 problems


def fence(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```\n"


class _Flip(ast.NodeTransformer):
    """The first < <= > >= flipped (or the first + made -): a plausible wrong answer."""

    FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}

    def __init__(self):
        self.done = False

    def visit_Compare(self, node):
        self.generic_visit(node)
        if not self.done and type(node.ops[0]) in self.FLIP:
            node.ops[0] = self.FLIP[type(node.ops[0])]()
            self.done = True
        return node


def mutant(code: str) -> str | None:
    flip = _Flip()
    tree = flip.visit(ast.parse(code))
    return ast.unparse(tree) if flip.done else None


def main(realdata: Path) -> None:
    rows_out, comps_out = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        convert("apps", realdata / "coderl_apps", tmp / "apps.jsonl")
        for row in iter_rows(tmp / "apps.jsonl"):
            gens = json.loads((realdata / "coderl_apps" / row.extra_info["id"] / "gen_solutions.json").read_text())
            refs = row.extra_info["reference_solutions"][:2]
            row.extra_info["reference_solutions"] = refs
            rows_out.append(row.model_dump())
            comps_out.append({"key": row.key, "responses": [fence(c) for c in refs] + [fence(g["code"]) for g in gens],
                              "expected": [1.0] * len(refs) + [1.0 if g["result"] is True else 0.0 for g in gens],
                              "origin": ["reference"] * len(refs) + ["coderl generation"] * len(gens)})
        lc = realdata / "leetcodedataset" / "LeetCodeDataset-v0.3.1-test.jsonl.gz"
        raw = [json.loads(line) for line in gzip.open(lc, "rt")][::LEETCODE_EVERY]
        (tmp / "lc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in raw))
        convert("leetcode", tmp / "lc.jsonl", tmp / "lc_rows.jsonl")
        by_task = {r["task_id"]: r for r in raw}
        for row in iter_rows(tmp / "lc_rows.jsonl"):
            src = by_task[row.extra_info["index"].removeprefix("leetcode_")]
            rows_out.append(row.model_dump())
            responses, expected, origin = [fence(src["completion"])], [1.0], ["reference"]
            if src.get("response"):
                responses.append(src["response"])
                expected.append(None)
                origin.append("dataset response (model answer, unlabelled)")
            bad = mutant(src["completion"])
            if bad is not None:
                responses.append(fence(bad))
                expected.append(None)
                origin.append("reference with its first comparison flipped (usually wrong)")
            comps_out.append({"key": row.key, "responses": responses, "expected": expected, "origin": origin})
        convert("nemo-gym", realdata / "nemo_gym_code_gen" / "example.jsonl", tmp / "ng.jsonl")
        by_prompt = {r.prompt[0].content: r for r in iter_rows(tmp / "ng.jsonl")}
        gym_expected = {"ff86821ed6f7260c7a17c4c9be03b663": 1.0, "c69268d8bdb4da0685d7b187c88296c1": 1.0}
        for line in (realdata / "nemo_gym_code_gen" / "example_rollouts.jsonl").read_text().splitlines():
            roll = json.loads(line)
            row = by_prompt[roll["responses_create_params"]["input"][0]["content"]]
            text = "".join(p["text"] for o in roll["response"]["output"] if o.get("type") == "message"
                           for p in o["content"] if "text" in p)
            rows_out.append(row.model_dump())
            comps_out.append({"key": row.key, "responses": [text],
                              "expected": [gym_expected.get(row.extra_info["id"], roll["reward"])],
                              "origin": ["gpt-4.1 rollout (NeMo-Gym)"]})
    for r in rows_out:
        r.pop("position", None)
    (HERE / "rows.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows_out))
    (HERE / "completions.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in comps_out))
    print(f"{len(rows_out)} problems, {sum(len(c['responses']) for c in comps_out)} responses")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/realdata"))
