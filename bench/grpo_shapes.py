"""GRPO-shaped batches from bench/data/grpo (real rows and real or mutated responses, each
labelled with the verdict it got when the data was made): 8 responses per prompt, drawn by verdict
class with a policy's weights, some of them repeats of an earlier response of the group wrapped
in other prose (identical after code extraction). Deterministic (seeded).

- ``weak``: mostly WA and RE, some TLE, a few AC; a tenth of the draws repeat an earlier
  response, and small pools repeat more: 26% of the responses are repeats (prompts without a
  failing candidate are left out: the card's weak model passes 0 of 8 on the median row);
- ``strong``: mostly AC, some WA/RE, rare TLE; a quarter of the draws repeat, 46% of the
  responses in all (a prompt's correct programs are its one or two references and the model
  answers that pass: low temperature, easy prompts).

Prompts with fewer than 4 candidates are left out (their groups would be mostly repeats).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "grpo"
PER_PROMPT = 8
MIN_CANDIDATES = 4  # a prompt with fewer distinct responses would be mostly repeats: left out
SHAPES = {
    "weak": ({"WA": 0.40, "RE": 0.30, "TLE": 0.25, "AC": 0.08, "CE": 0.05}, 0.10),
    "strong": ({"AC": 0.75, "WA": 0.12, "RE": 0.08, "TLE": 0.04, "CE": 0.02}, 0.25),
}
WRAPPERS = ("{r}", "Here is my solution.\n\n{r}", "Let me think step by step.\n\nThe approach is direct.\n\n{r}\n"
            "This runs within the limits.", "{r}\nDone.", "Solution:\n{r}", "Final answer below.\n\n{r}",
            "I will read the input and compute the answer.\n{r}", "{r}\n\nComplexity: linear.")


def load() -> tuple[dict[str, dict], list[dict]]:
    rows = {}
    for line in (DATA / "rows.jsonl").read_text().splitlines():
        r = json.loads(line)
        rows[f"{r['data_source']}:{r['extra_info']['index']}"] = r
    return rows, [json.loads(x) for x in (DATA / "candidates.jsonl").read_text().splitlines()]


def _draw(rng: random.Random, pool: dict[str, list[str]], weights: dict[str, float], chosen: list[str]) -> str:
    """A class by its weight, then a candidate of it not chosen yet (any, once all were)."""
    classes = [c for c in weights if pool.get(c)]
    cls = rng.choices(classes, [weights[c] for c in classes])[0]
    fresh = [p for p in pool[cls] if p not in chosen]
    return rng.choice(fresh or pool[cls])


def group(rng: random.Random, pool: dict[str, list[str]], weights: dict[str, float], repeat: float) -> list[str]:
    """One prompt's 8 responses: drawn by class, or (``repeat``) an earlier one in other prose."""
    chosen: list[str] = []
    for i in range(PER_PROMPT):
        program = rng.choice(chosen) if chosen and rng.random() < repeat else _draw(rng, pool, weights, chosen)
        chosen.append(program)
    return [WRAPPERS[i % len(WRAPPERS)].format(r=p) for i, p in enumerate(chosen)]


def items(shape: str, seed: int = 0) -> list[tuple]:
    """``(data_source, response, ground_truth, extra_info)`` of the shape, prompt by prompt."""
    weights, repeat = SHAPES[shape]
    rows, cands = load()
    out = []
    for c in cands:
        pool: dict[str, list[str]] = {}
        for response, verdict in zip(c["responses"], c["verdicts"]):
            pool.setdefault(verdict, []).append(response)
        failing = any(v != "AC" for v in pool)
        if shape == "weak" and not failing or len(set(c["responses"])) < MIN_CANDIDATES:
            continue
        rng = random.Random(f"{seed}:{shape}:{c['key']}")
        r = rows[c["key"]]
        out += [(r["data_source"], resp, r["reward_model"]["ground_truth"], r["extra_info"])
                for resp in group(rng, pool, weights, repeat)]
    return out


def warmup_item() -> tuple:
    """A one-case row no shape holds (first sandbox start and imports, nothing learned)."""
    gt = json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]})
    return ("code_taco", "```python\na, b = map(int, input().split())\nprint(a + b)\n```", gt, {"index": "warmup"})
