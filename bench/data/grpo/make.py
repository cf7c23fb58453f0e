"""Rebuild this folder's GRPO bench data from ../shared/realdata (provenance; bench/score.py reads
only rows.jsonl and candidates.jsonl). Run from the repository root (takes a few minutes: every
candidate is judged once to label it):

    .venv/bin/python bench/data/grpo/make.py ../shared/realdata
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
from arbiter.pipelines.codegen.references import measure_references
from arbiter.verl.reward import compute_score_batch

HERE = Path(__file__).resolve().parent
LEETCODE_EVERY = 12  # every 12th LeetCodeDataset row
APPS = ("0001", "0111", "2404")


def fence(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```\n"


class _Mutant(ast.NodeTransformer):
    """One plausible bug, applied at its ``site``-th chance (``kind``; ``done`` once applied)."""

    FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq}

    def __init__(self, kind: str, site: int = 0):
        self.kind, self.site, self.done = kind, site, False

    def _here(self, kind: str) -> bool:
        """This chance of ``kind`` is the one to take."""
        if self.kind != kind or self.done:
            return False
        self.site -= 1
        self.done = self.site < 0
        return self.done

    def visit_Compare(self, node):  # "flip": a boundary condition wrong (usually WA)
        self.generic_visit(node)
        if type(node.ops[0]) in self.FLIP and self._here("flip"):
            node.ops[0] = self.FLIP[type(node.ops[0])]()
        return node

    def visit_BinOp(self, node):  # "off_by_one": a constant one too big (WA or RE)
        self.generic_visit(node)
        if isinstance(node.right, ast.Constant) and type(node.right.value) is int and self._here("off_by_one"):
            node.right = ast.Constant(node.right.value + 1)
        return node

    def visit_Call(self, node):  # "bounds": a loop one past the end (usually RE: IndexError)
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "range" and len(node.args) == 1 \
                and self._here("bounds"):
            node.args[0] = ast.BinOp(node.args[0], ast.Add(), ast.Constant(1))
        return node

    def visit_While(self, node):  # "stuck": the loop's last update dropped (TLE where the loop runs)
        self.generic_visit(node)
        if len(node.body) > 1 and isinstance(node.body[-1], ast.AugAssign) and self._here("stuck"):
            node.body = node.body[:-1]
        return node

    def visit_Assign(self, node):  # "misread": the first input line read twice (RE or WA)
        self.generic_visit(node)
        if "input()" in ast.unparse(node.value) and self._here("misread"):
            return [node, ast.parse(ast.unparse(node)).body[0]]
        return node


#: Mutation kinds and how many sites of each are tried (a weak policy's bugs are many and varied).
MUTANTS = {"flip": 4, "off_by_one": 3, "bounds": 2, "stuck": 1, "misread": 1}


def mutants(code: str) -> list[tuple[str, str]]:
    out, seen = [], {code}
    for kind, sites in MUTANTS.items():
        for site in range(sites):
            try:
                m = _Mutant(kind, site)
                text = ast.unparse(ast.fix_missing_locations(m.visit(ast.parse(code))))
            except (SyntaxError, ValueError):
                continue
            if m.done and text not in seen:
                seen.add(text)
                out.append((f"mutant {kind}", text))
    return out


def candidates_of(row, realdata: Path, lc_by_task: dict, rollout: str | None) -> list[tuple[str, str]]:
    """(origin, response) of one problem: references, real model outputs, mutants."""
    refs = row.extra_info.get("reference_solutions") or []
    out = [("reference", fence(r)) for r in refs[:2]]
    if rollout is not None:
        out.append(("gpt-4.1 rollout (NeMo-Gym)", rollout))
    if row.extra_info.get("source") == "apps":
        gens = json.loads((realdata / "coderl_apps" / row.extra_info["id"] / "gen_solutions.json").read_text())
        out += [("coderl generation", fence(g["code"])) for g in gens]
    if row.data_source == "leetcode":
        src = lc_by_task[row.extra_info["index"].removeprefix("leetcode_")]
        if src.get("response"):
            out.append(("dataset response (model answer)", src["response"]))
    for ref in refs[:2]:
        out += [(origin, fence(code)) for origin, code in mutants(ref)]
    # more bugs, in the models' own programs (the dataset's answer, CodeRL's passing generations)
    models = [code for origin, code in out
              if origin in ("dataset response (model answer)", "coderl generation", "gpt-4.1 rollout (NeMo-Gym)")]
    for response in models[:3]:
        code = response.split("```python\n", 1)[-1].split("\n```", 1)[0]
        out += [(f"{origin} of a model answer", fence(m)) for origin, m in mutants(code)]
    return out


def main(realdata: Path) -> None:
    rows, cands = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        lc = realdata / "leetcodedataset" / "LeetCodeDataset-v0.3.1-test.jsonl.gz"
        raw = [json.loads(line) for line in gzip.open(lc, "rt")][::LEETCODE_EVERY]
        (tmp / "lc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in raw))
        lc_by_task = {r["task_id"]: r for r in raw}
        sources = [("codescope", realdata / "codescope_codeopt" / "code_optimization_data.jsonl"),
                   ("leetcode", tmp / "lc.jsonl"), ("apps", realdata / "coderl_apps"),
                   ("nemo-gym", realdata / "nemo_gym_code_gen" / "example.jsonl")]
        for source, path in sources:
            convert(source, path, tmp / f"{source}.jsonl", transform=lambda items: measure_references(items))
            for row in iter_rows(tmp / f"{source}.jsonl"):
                if source == "apps" and row.extra_info["id"].removeprefix("train/") not in APPS:
                    continue
                rows.append(row)
        gym = {json.loads(x)["responses_create_params"]["input"][0]["content"]: json.loads(x)
               for x in (realdata / "nemo_gym_code_gen" / "example_rollouts.jsonl").read_text().splitlines()}
        for row in rows:
            roll = gym.get(row.prompt[0].content) if row.extra_info.get("source") == "nemo_gym" else None
            text = None if roll is None else "".join(
                p["text"] for o in roll["response"]["output"] if o.get("type") == "message"
                for p in o["content"] if "text" in p)
            found = candidates_of(row, realdata, lc_by_task, text)
            cands.append({"key": row.key, "origins": [o for o, _ in found], "responses": [r for _, r in found]})
    label(rows, cands)
    (HERE / "rows.jsonl").write_text("".join(json.dumps(r.model_dump(exclude={"position"}), ensure_ascii=False) + "\n"
                                             for r in rows))
    (HERE / "candidates.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cands))
    print(f"{len(rows)} problems, {sum(len(c['responses']) for c in cands)} candidate responses")


def label(rows, cands) -> None:
    """Each candidate's verdict, judged once here, so the bench can compose its shapes."""
    by_key = {r.key: r for r in rows}
    for c in cands:
        r = by_key[c["key"]]
        n = len(c["responses"])
        res = compute_score_batch([r.data_source] * n, c["responses"], [r.ground_truth] * n, [r.extra_info] * n,
                                  on_invalid="zero", on_sandbox_error="report", reuse=False, case_order="suite")
        c["verdicts"] = [x["verdict"] for x in res]
        print(c["key"], dict(sorted({v: c["verdicts"].count(v) for v in set(c["verdicts"])}.items())), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/realdata"))
