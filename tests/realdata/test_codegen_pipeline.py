"""The codegen card end to end through the real CLI, on real rows of the shared real-data folder: ``arbiter convert`` ->
candidate rows of two sources -> ``arbiter sample`` from a local OpenAI-compatible server with a weak and a strong
"model" -> ``arbiter score`` -> ``arbiter curate goldilocks`` -> ``arbiter curate consolidate`` -> ``arbiter
report``.

The two models answer every row with real programs from the data in fixed proportions: ``c`` correct ones (the
row's reference solutions, or the NeMo-Gym rollout graded 1.0), the rest wrong ones (CodeRL generations labelled
wrong, another row's reference, the NeMo-Gym rollout that prints nothing) and no-code answers. So every pass rate,
per-completion score, the kept set, the new indexes and ``code_`` prefixes are known before anything runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oracle_fake_server import FakeOpenAIServer, Script  # noqa: E402

from arbiter.datasets.io import read_jsonl
from arbiter.datasets.verl_rows import iter_raw_rows
from arbiter.pipelines.goldilocks import is_goldilocks

pytestmark = pytest.mark.slow

SOURCES = {"apps": "coderl_apps", "leetcode": "leetcodedataset/LeetCodeDataset-v0.3.1-test.jsonl.gz",
           "codescope": "codescope_codeopt/code_optimization_data.jsonl", "nemo-gym": "nemo_gym_code_gen/example.jsonl"}
NEMO = "nemo_gym_code_gen/example_rollouts.jsonl"
N = 8
#: source prefix -> [(converted extra_info.index, weak correct of 8, strong correct of 8)], in output order
PLAN = {
    "deepcoder": [("apps_train_0001", 2, 6),  # APPS stdin: kept
                  ("apps_train_2404", 8, 8),  # APPS call-based (fn_name): ceiling
                  ("leetcode_final-array-state-after-k-multiplication-operations-ii", 7, 8),  # lower 0.875: kept
                  ("leetcode_permutations-iii", 0, 1),  # upper 0.125: kept
                  ("nemo_gym_c69268d8bdb4da0685d7b187c88296c1", 1, 0),  # NeMo-Gym: floor
                  ("nemo_gym_1a54a91d7294e33bed666e3bc94148fd", 0, 0)],  # NeMo-Gym, no correct program: floor
    "cco": [("codescope_13", 3, 5),  # CodeScope (Codeforces): kept
            ("codescope_28", 8, 0)],  # floor+ceiling
}
NO_CODE = "I am not sure how to solve this problem, sorry."


def fence(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code}\n```\n"


def arbiter(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "arbiter.cli.main", *args], capture_output=True, text=True)
    assert r.returncode in ok, (args, r.returncode, r.stderr[-3000:])
    return r


def _nemo_rollouts(shared: Path) -> dict[str, str]:
    """NeMo-Gym prompt text -> the graded rollout's whole markdown answer."""
    out = {}
    for line in (shared / "realdata" / NEMO).read_text().splitlines():
        r = json.loads(line)
        out[r["responses_create_params"]["input"][0]["content"]] = "".join(
            p["text"] for o in r["response"]["output"] if o.get("type") == "message" for p in o["content"] if "text" in p)
    return out


def _programs(rows: dict[str, dict], shared: Path) -> dict[str, tuple[list[str], list[str]]]:
    """index -> (correct answers, wrong answers), all real programs of the data."""
    refs = {i: [fence(c) for c in r["extra_info"].get("reference_solutions") or []] for i, r in rows.items()}
    rollouts = _nemo_rollouts(shared)
    gens = json.loads((shared / "realdata/coderl_apps/train/0001/gen_solutions.json").read_text())
    out = {"apps_train_0001": (refs["apps_train_0001"], [fence(g["code"]) for g in gens if g["result"] is not True])}
    out["apps_train_2404"] = (refs["apps_train_2404"], refs["leetcode_permutations-iii"])
    lc = [i for i in rows if i.startswith("leetcode")]
    for i in lc:
        out[i] = (refs[i], [x for j in lc if j != i for x in refs[j]])
    nemo = {i: rollouts[rows[i]["prompt"][0]["content"]] for i in rows if i.startswith("nemo")}
    out["nemo_gym_c69268d8bdb4da0685d7b187c88296c1"] = ([nemo["nemo_gym_c69268d8bdb4da0685d7b187c88296c1"]],
                                                        refs["codescope_13"])
    out["nemo_gym_1a54a91d7294e33bed666e3bc94148fd"] = ([], [nemo["nemo_gym_1a54a91d7294e33bed666e3bc94148fd"]])
    out["codescope_13"] = (refs["codescope_13"], refs["codescope_28"])
    out["codescope_28"] = (refs["codescope_28"], refs["codescope_13"])
    return out


def answers(correct: list[str], wrong: list[str], c: int) -> tuple[list[str], list[float]]:
    """N answers with ``c`` correct ones at fixed positions, the others wrong programs and no-code answers."""
    slots = [(k * 3 + 1) % N for k in range(N)]  # a fixed permutation of 0..7
    texts, scores = [""] * N, [0.0] * N
    for k, slot in enumerate(slots):
        if k < c:
            texts[slot], scores[slot] = correct[k % len(correct)], 1.0
        else:
            texts[slot] = NO_CODE if k % 3 == 2 else wrong[k % len(wrong)]
    return texts, scores


@pytest.fixture(scope="module")
def pipeline(shared: Path, tmp_path_factory) -> dict:
    """Runs the whole sequence once; the paths it wrote (for the checks and the report step) and the plan."""
    work = tmp_path_factory.mktemp("codegen_pipeline")
    rows: dict[str, dict] = {}
    for source, rel in SOURCES.items():
        arbiter("convert", "--from", source, str(shared / "realdata" / rel), "--out", str(work / f"{source}.jsonl"),
                "--no-measure-references")
        rows.update({r["extra_info"]["index"]: r for r in read_jsonl(work / f"{source}.jsonl")})
    programs = _programs(rows, shared)
    scripts, expected = [], {}
    for prefix, plan in PLAN.items():
        (work / f"{prefix}.candidates.jsonl").write_text(
            "".join(json.dumps(rows[i]) + "\n" for i, _, _ in plan))
        for i, weak, strong in plan:
            prompt = rows[i]["prompt"][-1]["content"]
            for model, c in (("weak", weak), ("strong", strong)):
                texts, scores = answers(*programs[i], c)
                scripts.append(Script(f"{model}:{i}", lambda m, p=prompt: m[-1]["content"] == p, texts, model=model))
                expected[(i, model)] = scores
    with FakeOpenAIServer(scripts, models=["weak", "strong"]) as srv:
        for prefix in PLAN:
            for model in ("weak", "strong"):
                arbiter("sample", "--dataset", str(work / f"{prefix}.candidates.jsonl"), "--model", model,
                        "--base-url", srv.base_url, "--n", str(N), "--temperature", "1.0", "--seed", "0",
                        "--out", str(work / f"{prefix}.{model}.completions.jsonl"), "--quiet")
    for prefix in PLAN:
        for model in ("weak", "strong"):
            arbiter("score", "--dataset", str(work / f"{prefix}.candidates.jsonl"), "--completions",
                    str(work / f"{prefix}.{model}.completions.jsonl"), "--out", str(work / f"score.{prefix}.{model}"),
                    "--quiet")
        arbiter("curate", "goldilocks", "--dataset", str(work / f"{prefix}.candidates.jsonl"),
                "--weak", str(work / f"score.{prefix}.weak"), "--strong", str(work / f"score.{prefix}.strong"),
                "--out", str(work / f"{prefix}.goldilocks.jsonl"), "--no-english-filter", "--quiet")
    final = work / "final.parquet"
    arbiter("curate", "consolidate", "--source", f"deepcoder={work / 'deepcoder.goldilocks.jsonl'}",
            "--source", f"cco={work / 'cco.goldilocks.jsonl'}", "--out", str(final))
    return {"work": work, "final": final, "rows": rows, "expected": expected,
            "score_dirs": {(p, m): work / f"score.{p}.{m}" for p in PLAN for m in ("weak", "strong")}}


def test_every_pass_rate_is_the_known_fraction(pipeline):
    for (prefix, model), folder in pipeline["score_dirs"].items():
        problems = {p["index"]: p for p in read_jsonl(folder / "problems.jsonl")}
        for i, weak, strong in PLAN[prefix]:
            c = weak if model == "weak" else strong
            assert (problems[i]["n"], problems[i]["c"], problems[i]["pass_rate"]) == (N, c, c / N), (i, model)
        verdicts = {(v["index"], v["response_idx"]): v["score"] for v in read_jsonl(folder / "verdicts.jsonl")}
        for i, _, _ in PLAN[prefix]:
            assert [verdicts[(i, k)] for k in range(N)] == pipeline["expected"][(i, model)], (i, model)


def test_kept_rows_are_the_ones_the_thresholds_select(pipeline):
    final = list(iter_raw_rows(pipeline["final"]))
    want = [(prefix, i, w, s) for prefix, plan in PLAN.items() for i, w, s in plan if is_goldilocks(w / N, s / N)]
    assert [r["extra_info"]["id"] for r in final] == [pipeline["rows"][i]["extra_info"]["id"] for _, i, _, _ in want]
    assert len(final) == 4
    counters: dict[str, int] = {}
    for row, (prefix, i, w, s) in zip(final, want):
        ei = row["extra_info"]
        assert ei["index"] == f"{prefix}_{counters.setdefault(prefix, 0)}"
        counters[prefix] += 1
        assert (ei["lower_pass_rate"], ei["upper_pass_rate"]) == (w / N, s / N)
        assert ei["lower_scores"] == pipeline["expected"][(i, "weak")]
        assert ei["upper_scores"] == pipeline["expected"][(i, "strong")]
        source_ds = pipeline["rows"][i]["data_source"]
        assert row["data_source"] == (source_ds if "code" in source_ds else f"code_{source_ds}")
        assert "code" in row["data_source"]
        assert row["prompt"] == pipeline["rows"][i]["prompt"]
        assert row["reward_model"]["ground_truth"] == pipeline["rows"][i]["reward_model"]["ground_truth"]
    assert {r["data_source"] for r in final} == {"code_apps", "leetcode", "codeforces"}  # "leetcode" holds "code"


def test_completions_carry_sampling_details(pipeline):
    rec = next(read_jsonl(pipeline["work"] / "deepcoder.strong.completions.jsonl"))
    assert rec["model"] == "strong" and len(rec["responses"]) == N and rec["finish_reasons"] == ["stop"] * N
    assert rec["sampling"]["temperature"] == 1.0 and rec["sampling"]["n"] == N and rec["usage"]["total_tokens"] > 0


# ------------------------------------------------------------------ arbiter report
def test_report_counts_what_the_plan_says(pipeline):
    """``arbiter report`` on the consolidated rows (with the candidates) and on one score folder: composition,
    kept/candidate, difficulty and the pass-rate histogram equal a count made here from PLAN alone."""
    from PIL import Image

    from arbiter.pipelines.report import section_of

    work, out = pipeline["work"], pipeline["work"] / "report"
    arbiter("report", str(pipeline["final"]), "--out", str(out),
            *[a for prefix in PLAN for a in ("--candidates", f"{prefix}={work / f'{prefix}.candidates.jsonl'}")],
            str(pipeline["score_dirs"][("deepcoder", "weak")]))
    content = json.loads((out / "report.json").read_text())
    data = section_of(content, "dataset")["data"]
    kept = {p: [(w, s) for _, w, s in plan if is_goldilocks(w / N, s / N)] for p, plan in PLAN.items()}
    by_source = {s["source"]: s for s in data["composition"]["sources"]}
    assert {p: (s["rows"], s["candidates"]) for p, s in by_source.items()} == {
        p: (len(kept[p]), len(PLAN[p])) for p in PLAN}
    all_kept = [ws for p in PLAN for ws in kept[p]]
    overall = next(d for d in data["difficulty"] if d["slice"] == "overall")
    assert overall["weak_mean"] == pytest.approx(sum(w for w, _ in all_kept) / N / len(all_kept))
    assert overall["strong_mean"] == pytest.approx(sum(s for _, s in all_kept) / N / len(all_kept))
    hist = data["figures"]["pass_rates"]
    assert hist["weak"] == [sum(1 for w, _ in all_kept if w == j) for j in range(N + 1)]
    assert hist["strong"] == [sum(1 for _, s in all_kept if s == j) for j in range(N + 1)]
    weak_rates = section_of(content, "score")["data"]["figures"]["pass_rates"]
    assert weak_rates["k"] == N
    assert weak_rates["rates"] == [sum(1 for _, w, _ in PLAN["deepcoder"] if w == j) for j in range(N + 1)]
    for name in section_of(content, "dataset")["plots"].values():
        with Image.open(out / name) as im:
            assert im.format == "PNG" and im.size[0] > 100
        assert f"]({name})" in (out / "report.md").read_text()


def test_every_stage_has_the_cards_schema_and_hf_datasets_concatenates_them(pipeline, tmp_path):
    """Candidates (arbiter convert's Parquet), kept rows (curate goldilocks) and the final file
    (curate consolidate) share one schema, the card's: reward_model {style, ground_truth, method}
    with a string ground truth, so HF datasets loads and concatenates them."""
    from datasets import concatenate_datasets, load_dataset

    from arbiter.datasets.convert import RowWriter

    work = pipeline["work"]
    candidates = tmp_path / "deepcoder.candidates.parquet"
    with RowWriter(candidates) as writer:  # the Parquet writer of arbiter convert
        for row in read_jsonl(work / "deepcoder.candidates.jsonl"):
            writer.write(row)
    kept, final = tmp_path / "deepcoder.goldilocks.parquet", tmp_path / "final.parquet"
    arbiter("curate", "goldilocks", "--dataset", str(candidates), "--weak", str(work / "score.deepcoder.weak"),
            "--strong", str(work / "score.deepcoder.strong"), "--out", str(kept), "--no-english-filter", "--quiet")
    arbiter("curate", "consolidate", "--source", f"deepcoder={kept}", "--out", str(final))
    stages = {name: load_dataset("parquet", data_files=str(path), split="train")
              for name, path in (("candidates", candidates), ("kept", kept), ("final", final))}
    for ds in stages.values():
        rm = ds.features["reward_model"]
        assert list(rm) == ["style", "ground_truth", "method"] and rm["ground_truth"].dtype == "string", rm
    assert stages["kept"].features == stages["final"].features
    both = concatenate_datasets([stages["kept"], stages["final"]])
    assert len(both) == len(stages["kept"]) + len(stages["final"]) > 0
    assert all(r["reward_model"]["method"] is None for r in both)
