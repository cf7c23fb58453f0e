"""``arbiter report`` through the real CLI, on a consolidated dataset built here from real rows (APPS, CodeScope,
LeetCode, NeMo-Gym converted with the library) with known per-completion scores, on a real ``arbiter score``
folder, a real ``arbiter pie eval`` folder and a real ``arbiter oracle verify`` folder. Every number is checked
against a count made here from the inputs; every PNG is read back as an image.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arbiter.datasets.convert import convert
from arbiter.datasets.io import read_jsonl
from arbiter.datasets.verl_rows import iter_raw_rows

REPO = Path(__file__).resolve().parents[2]
ORACLE = REPO / "data/oracle"
ARBITER = [sys.executable, "-m", "arbiter.cli.main"]
K = 8
# consolidated source -> (prefix, the converter runs whose rows are its candidates)
SOURCES = {"cco": ["apps", "codescope"], "deepcoder": ["leetcode", "nemo-gym"]}
REAL = {"apps": "coderl_apps", "codescope": "codescope_codeopt/code_optimization_data.jsonl",
        "leetcode": "leetcodedataset/LeetCodeDataset-v0.3.1-test.jsonl.gz",
        "nemo-gym": "nemo_gym_code_gen/example.jsonl"}
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*ARBITER, *args], capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env=dict(os.environ, COLUMNS="200"))


def scores_for(i: int) -> tuple[list[float], list[float]]:
    """Known weak / strong scores of candidate i: i % 9 and (3 * i + 1) % 9 passes of 8, capped at 8."""
    weak, strong = min(K, i % 9), min(K, (3 * i + 1) % 9)
    return [1.0] * weak + [0.0] * (K - weak), [0.0] * (K - strong) + [1.0] * strong


def cases_of(ground_truth: str) -> int:
    gt = json.loads(ground_truth)
    return len(gt["inputs"]) if isinstance(gt, dict) else len(gt)


def chatml(messages: list[dict]) -> str:
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"


def pieces(text: str) -> int:  # the Whitespace pre-tokenizer's pieces, each one word of the trained vocabulary
    return len(re.findall(r"\w+|[^\w\s]+", text))


@pytest.fixture(scope="module")
def data(shared: Path, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("report")
    candidates, kept, i = {}, [], 0
    for source, runs in SOURCES.items():
        cand = []
        for run in runs:
            convert(run, shared / "realdata" / REAL[run], root / f"{run}.jsonl")
            cand += list(iter_raw_rows(root / f"{run}.jsonl"))
        (root / f"{source}_candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in cand))
        candidates[source] = cand
        j = 0
        for r in cand:  # the card's consolidation: goldilocks rows, re-indexed, code_ prefixed, scores folded in
            lower, upper = scores_for(i)
            i += 1
            lr, ur = sum(lower) / K, sum(upper) / K
            if not (lr <= 0.875 and ur >= 0.125):
                continue
            ds = r["data_source"] if "code" in r["data_source"] else f"code_{r['data_source']}"
            kept.append({"data_source": ds, "prompt": r["prompt"], "ability": "code", "reward_model": r["reward_model"],
                         "extra_info": {"index": f"{source}_{j}", "id": r["extra_info"]["index"],
                                        "lower_pass_rate": lr, "lower_scores": lower, "upper_pass_rate": ur,
                                        "upper_scores": upper}, "source": source})
            j += 1
    dataset = root / "consolidated.parquet"
    pq.write_table(pa.Table.from_pylist([{k: v for k, v in r.items() if k != "source"} for r in kept]), dataset)
    return {"root": root, "kept": kept, "candidates": candidates, "dataset": dataset}


@pytest.fixture(scope="module")
def tokenizer(data) -> tuple[Path, dict]:
    pytest.importorskip("jinja2")  # renders the chat template
    tokenizers = pytest.importorskip("tokenizers")
    Tokenizer, models, pre_tokenizers, trainers = (tokenizers.Tokenizer, tokenizers.models, tokenizers.pre_tokenizers,
                                                   tokenizers.trainers)

    texts = [chatml(r["prompt"]) for r in data["kept"]]
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=["[UNK]"], min_frequency=1))
    folder = data["root"] / "tok"
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": CHATML}))
    return folder, {id(r): pieces(t) for r, t in zip(data["kept"], texts)}


@pytest.fixture(scope="module")
def dataset_report(data, tokenizer) -> dict:
    out = data["root"] / "report"
    r = cli("report", str(data["dataset"]), "--out", str(out), "--tokenizer", str(tokenizer[0]),
            "--candidates", f"cco={data['root'] / 'cco_candidates.jsonl'}",
            "--candidates", f"deepcoder={data['root'] / 'deepcoder_candidates.jsonl'}", "--prompt-cap", "300")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((out / "report.json").read_text())
    assert len(rep["sections"]) == 1 and rep["sections"][0]["kind"] == "dataset"
    return {"out": out, "section": rep["sections"][0], "md": (out / "report.md").read_text()}


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def pass_at(n: int, c: int, k: int) -> float:
    return 1 - math.comb(n - c, k) / math.comb(n, k)


def assert_png(path: Path) -> None:
    from PIL import Image

    assert path.is_file() and path.stat().st_size > 1000, path
    with Image.open(path) as im:
        im.verify()
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] > 100 and im.size[1] > 100


def test_composition_and_kept_over_candidates(data, dataset_report):
    comp = dataset_report["section"]["data"]["composition"]
    kept = data["kept"]
    by_source = {s["source"]: s for s in comp["sources"]}
    assert set(by_source) == set(SOURCES)
    for source, cand in data["candidates"].items():
        rows = [r for r in kept if r["source"] == source]
        s = by_source[source]
        assert (s["rows"], s["candidates"]) == (len(rows), len(cand))
        assert s["share"] == pytest.approx(len(rows) / len(kept))
        assert s["kept_share"] == pytest.approx(len(rows) / len(cand))
        parts = {}
        for r in rows:
            parts[r["data_source"]] = parts.get(r["data_source"], 0) + 1
        assert {d["data_source"]: d["rows"] for d in s["data_sources"]} == parts
        assert all(d.startswith("code_") or "code" in d for d in parts)
    total = sum(len(c) for c in data["candidates"].values())
    assert comp["total"] == {"rows": len(kept), "candidates": total, "kept_share": pytest.approx(len(kept) / total)}
    assert f"{len(kept):,} / {total:,}" in dataset_report["md"]


def test_a_source_with_no_kept_row_keeps_its_line_and_its_candidates(data, tmp_path):
    """Four candidate sources, one of which kept nothing: its line stays (0 rows) and the total's yield counts
    its candidates (before, it vanished and the yield was overstated: 39 / 53 instead of 39 / 58)."""
    kept = data["kept"]
    named = {"cco": data["root"] / "cco_candidates.jsonl", "deepcoder": data["root"] / "deepcoder_candidates.jsonl",
             "taco": data["root"] / "apps.jsonl", "lcb": data["root"] / "leetcode.jsonl"}
    sizes = {name: sum(1 for _ in iter_raw_rows(path)) for name, path in named.items()}
    r = cli("report", str(data["dataset"]), "--out", str(tmp_path / "named"),
            *[a for name, path in named.items() for a in ("--candidates", f"{name}={path}")])
    assert r.returncode == 0, r.stdout + r.stderr
    comp = json.loads((tmp_path / "named" / "report.json").read_text())["sections"][0]["data"]["composition"]
    by_source = {s["source"]: s for s in comp["sources"]}
    assert set(by_source) == set(named)
    for name in ("taco", "lcb"):
        assert (by_source[name]["rows"], by_source[name]["candidates"], by_source[name]["kept_share"]) == (
            0, sizes[name], 0.0)
    total = sum(sizes.values())
    assert comp["total"] == {"rows": len(kept), "candidates": total, "kept_share": pytest.approx(len(kept) / total)}
    md = (tmp_path / "named" / "report.md").read_text()
    assert f"| taco | 0 | 0.0% | 0 / {sizes['taco']:,} (0.0%) |" in md
    assert f"| total | {len(kept):,} | 100.0% | {len(kept):,} / {total:,} ({100 * len(kept) / total:.1f}%) |" in md
    # unnamed candidates whose data_sources kept nothing: each such data_source gets a line of its own
    only_cco = tmp_path / "cco.parquet"
    cco_rows = [r for r in kept if r["source"] == "cco"]
    pq.write_table(pa.Table.from_pylist([{k: v for k, v in r.items() if k != "source"} for r in cco_rows]), only_cco)
    dropped = data["candidates"]["deepcoder"]
    r = cli("report", str(only_cco), "--out", str(tmp_path / "by_ds"), "--candidates", f"cco={named['cco']}",
            "--candidates", str(named["deepcoder"]))
    assert r.returncode == 0, r.stdout + r.stderr
    comp = json.loads((tmp_path / "by_ds" / "report.json").read_text())["sections"][0]["data"]["composition"]
    want = {}
    for row in dropped:
        ds = row["data_source"] if "code" in row["data_source"] else f"code_{row['data_source']}"
        want[ds] = want.get(ds, 0) + 1
    lines = {s["source"]: (s["rows"], s["candidates"]) for s in comp["sources"]}
    kept_ds = {r["data_source"] for r in cco_rows}  # codeforces is in both: its line is cco's
    assert lines == {"cco": (len(cco_rows), sizes["cco"]), **{d: (0, n) for d, n in want.items() if d not in kept_ds}}
    assert len(lines) >= 2
    assert comp["total"]["candidates"] == sizes["cco"] + len(dropped)


def test_difficulty_suites_and_prompt_tokens(data, dataset_report, tokenizer):
    sec, kept = dataset_report["section"]["data"], data["kept"]
    slices = {"overall": kept, **{s: [r for r in kept if r["source"] == s] for s in SOURCES}}
    diff = {d["slice"]: d for d in sec["difficulty"]}
    suites = {d["slice"]: d for d in sec["suites"]}
    for name, rows in slices.items():
        weak = [r["extra_info"]["lower_pass_rate"] for r in rows]
        strong = [r["extra_info"]["upper_pass_rate"] for r in rows]
        assert diff[name]["weak_mean"] == pytest.approx(sum(weak) / len(weak))
        assert diff[name]["strong_mean"] == pytest.approx(sum(strong) / len(strong))
        assert (diff[name]["weak_median"], diff[name]["strong_median"]) == (median(weak), median(strong))
        cases = [cases_of(r["reward_model"]["ground_truth"]) for r in rows]
        got = suites[name]
        assert (got["total"], got["median"], got["min"], got["max"]) == (sum(cases), median(cases), min(cases),
                                                                          max(cases))
        assert got["mean"] == pytest.approx(sum(cases) / len(cases))
    assert sec["unconvertible_suites"] == 0 and sec["annotated_rows"] == len(kept)
    tokens = [tokenizer[1][id(r)] for r in kept]
    p = sec["prompts"]
    assert p["unit"] == "tokens" and "chat-templated" in p["how"]
    assert (p["total"], p["max"], p["median"]) == (sum(tokens), max(tokens), median(tokens))
    assert p["over_cap"] == sum(1 for t in tokens if t > 300)
    import numpy as np

    assert p["p95"] == pytest.approx(float(np.percentile(tokens, 95)))


def test_plots_hold_the_counted_data(data, dataset_report):
    import numpy as np

    sec, kept, out = dataset_report["section"], data["kept"], dataset_report["out"]
    fig = sec["data"]["figures"]
    weak = [sum(r["extra_info"]["lower_scores"]) for r in kept]
    strong = [sum(r["extra_info"]["upper_scores"]) for r in kept]
    assert fig["pass_rates"]["k"] == K and fig["pass_rates"]["bins"] == [j / K for j in range(K + 1)]
    assert fig["pass_rates"]["weak"] == [weak.count(j) for j in range(K + 1)]
    assert fig["pass_rates"]["strong"] == [strong.count(j) for j in range(K + 1)]
    assert fig["pass_rates"]["weak"][K] == 0 and fig["pass_rates"]["strong"][0] == 0  # the thresholds held
    cases = [cases_of(r["reward_model"]["ground_truth"]) for r in kept]
    counts, _ = np.histogram(cases, bins=fig["suite_sizes"]["edges"])
    assert fig["suite_sizes"]["counts"] == counts.tolist() and sum(counts) == len(kept)
    edges = fig["suite_sizes"]["edges"]  # log-x exactly when the bins are log-spaced (audit)
    log_spaced = edges[2] - edges[1] > (edges[1] - edges[0]) * 1.0001
    assert fig["suite_sizes"]["log"] == log_spaced == (max(cases) / min(cases) > 20)
    for model, field in (("weak", "lower_scores"), ("strong", "upper_scores")):
        for ds, curve in fig["pass_at_k"][model].items():
            rows = [r for r in kept if r["data_source"] == ds]
            for k in range(1, K + 1):
                want = sum(pass_at(K, int(sum(r["extra_info"][field])), k) for r in rows) / len(rows)
                assert curve[str(k)] == pytest.approx(want), (model, ds, k)
    assert set(sec["plots"]) == {"pass_rates", "pass_at_k", "suite_sizes"}
    for name in sec["plots"].values():
        assert_png(out / name)
        assert f"]({name})" in dataset_report["md"]


def test_characters_without_tokenizer_and_bad_inputs_exit_2(data, tmp_path):
    out = tmp_path / "chars"
    r = cli("report", str(data["dataset"]), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    p = json.loads((out / "report.json").read_text())["sections"][0]["data"]["prompts"]
    assert p["unit"] == "characters"
    assert p["total"] == sum(len(m["content"]) for r in data["kept"] for m in r["prompt"])
    # unnamed candidates count by data_source; a source gets a total only when it shares no data_source
    cand = data["root"] / "cco_candidates.jsonl"
    r = cli("report", str(data["dataset"]), "--out", str(tmp_path / "by_ds"), "--candidates", str(cand))
    assert r.returncode == 0, r.stdout + r.stderr
    comp = json.loads((tmp_path / "by_ds" / "report.json").read_text())["sections"][0]["data"]["composition"]
    by_source = {s["source"]: s for s in comp["sources"]}
    apps = {d["data_source"]: d for d in by_source["cco"]["data_sources"]}["code_apps"]
    assert apps["candidates"] == sum(1 for r in data["candidates"]["cco"] if r["data_source"] == "apps")
    assert by_source["cco"]["candidates"] is None and comp["total"]["candidates"] is None  # codeforces is in both
    # a dataset without the annotation: the suite table and plot only
    r = cli("report", str(cand), "--out", str(tmp_path / "plain"))
    assert r.returncode == 0, r.stdout + r.stderr
    sec = json.loads((tmp_path / "plain" / "report.json").read_text())["sections"][0]
    assert sec["data"]["annotated_rows"] == 0 and set(sec["plots"]) == {"suite_sizes"}
    assert sec["data"]["suites"][0]["total"] == sum(cases_of(r["reward_model"]["ground_truth"])
                                                     for r in data["candidates"]["cco"])
    junk = tmp_path / "junk.txt"
    junk.write_text("hello")
    for args, words in (([str(junk)], "neither a verl dataset"), ([str(tmp_path / "nope.parquet")], "not found"),
                        ([str(data["dataset"]), "--tokenizer", str(junk)], "not a tokenizers tokenizer.json")):
        e = cli("report", *args, "--out", str(tmp_path / "bad"))
        assert e.returncode == 2 and words in e.stdout, e.stdout + e.stderr


def test_a_stored_pass_rate_that_its_scores_do_not_give_is_not_used_and_is_named(tmp_path):
    """A row storing lower_pass_rate 0.5 with scores giving 1/8: the difficulty table and the histogram used
    0.5 while pass@1 used the scores (0.25 against 0.0625 for one slice; red team, pipelines). Every figure
    uses the scores now, and the row is named."""
    gt = json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]})

    def row(i, lower_rate, lower, upper):
        return {"data_source": "code_taco", "prompt": [{"role": "user", "content": "Add."}], "ability": "code",
                "reward_model": {"style": "rule", "ground_truth": gt},
                "extra_info": {"index": f"deepcoder_{i}", "lower_pass_rate": lower_rate, "lower_scores": lower,
                               "upper_pass_rate": sum(upper) / 8, "upper_scores": upper}}

    rows = [row(0, 0.5, [1] + [0] * 7, [1] * 4 + [0] * 4), row(1, 0.0, [0] * 8, [1] * 2 + [0] * 6)]
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = cli("report", str(dataset), "--out", str(tmp_path / "r"))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "r" / "report.json").read_text())["sections"][0]["data"]
    weak_pass_at_1 = data["figures"]["pass_at_k"]["weak"]["code_taco"]["1"]
    assert weak_pass_at_1 == pytest.approx(1 / 16)
    assert data["figures"]["pass_rates"]["weak"] == [1, 1, 0, 0, 0, 0, 0, 0, 0]
    assert (data["stored_rates_differ"], data["stored_rates_differ_keys"]) == (1, ["code_taco:deepcoder_0"])
    md = (tmp_path / "r" / "report.md").read_text()
    assert "| overall | 2 | 0.062 | 0.062 | 0.375 | 0.375 |" in md, md
    assert "1 row(s) store a pass rate their scores do not give" in md and "code_taco:deepcoder_0" in md


def _score_folder(rows: list[dict], passes: dict[int, int], folder: Path) -> dict:
    """A real ``arbiter score`` run where row i has ``passes[i]`` of its n = 3 responses the row's reference
    solution and the rest a reply without code, so every pass rate is known; ``index -> (data_source, c)``."""
    known, comps = {}, []
    for i, r in enumerate(rows):
        c = passes[i]
        ref = r["extra_info"]["reference_solutions"][0]
        comps.append({"data_source": r["data_source"], "index": r["extra_info"]["index"],
                      "responses": [f"```python\n{ref}\n```"] * c + ["I cannot solve this."] * (3 - c)})
        known[r["extra_info"]["index"]] = (r["data_source"], c)
    completions = folder.parent / f"{folder.name}.completions.jsonl"
    completions.write_text("".join(json.dumps(c) + "\n" for c in comps))
    s = cli("score", "--dataset", str(folder.parent / "rows.jsonl"), "--completions", str(completions),
            "--out", str(folder))
    assert s.returncode == 0, s.stdout + s.stderr
    return known


def test_a_score_folder_says_what_it_leaves_out(tmp_path):
    """The score summary counted an INVALID_TASK row's responses, the report left them out without saying
    how many, and rows listed in errors.jsonl showed nowhere (red team, pipelines): the section counts both."""
    good = {"inputs": ["1 2\n"], "outputs": ["3\n"]}

    def row(i, gt):
        return {"data_source": "code_taco", "prompt": [{"role": "user", "content": "Add."}], "ability": "code",
                "reward_model": {"style": "rule", "ground_truth": json.dumps(gt)}, "extra_info": {"index": f"t{i}"}}

    rows = [row(0, good), row(1, {"inputs": ["1\n"], "outputs": []}), row(2, good)]
    del rows[2]["reward_model"]  # (not a verl row: listed in errors.jsonl)
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    program = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"index": f"t{i}", "responses": [program] * 2}) + "\n"
                                              for i in range(3)))
    s = cli("score", "--dataset", str(tmp_path / "rows.jsonl"), "--completions", str(tmp_path / "c.jsonl"),
            "--out", str(tmp_path / "out"))
    assert s.returncode == 0, s.stdout + s.stderr
    r = cli("report", str(tmp_path / "out"), "--out", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "rep" / "report.json").read_text())["sections"][0]["data"]
    assert (data["problems"], data["invalid_problems"], data["invalid_responses"], data["unusable_rows"]) == (1, 1, 2, 1)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "1 problems; left out: 1 INVALID_TASK problem(s) (2 responses) and 1 dataset row(s)" in md, md
    assert data["problems_at_k"] == {"1": 1, "2": 1} and "| problems with >= k responses | 1 | 1 |" in md, md


def test_score_folder_pass_rates_and_pass_at_k(data, tmp_path):
    """Two real ``arbiter score`` folders named as the README names them (``score/lc30.weak``,
    ``score/lc30.strong``): each is a section of its own name (the suffix was dropped as if it were a file
    extension: ``lc30`` and ``lc30_2``), and a side-by-side section compares them."""
    rows = [r for run in ("apps", "leetcode") for r in list(iter_raw_rows(data["root"] / f"{run}.jsonl"))[:3]]
    (tmp_path / "score").mkdir()
    (tmp_path / "score" / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    weak = _score_folder(rows, {i: i % 4 if i % 4 < 3 else 0 for i in range(len(rows))}, tmp_path / "score" / "lc30.weak")
    strong = _score_folder(rows, {i: 3 - i % 2 for i in range(len(rows))}, tmp_path / "score" / "lc30.strong")
    out = tmp_path / "rep"
    r = cli("report", str(tmp_path / "score" / "lc30.weak"), str(tmp_path / "score" / "lc30.strong"), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    sections = json.loads((out / "report.json").read_text())["sections"]
    assert [(s["kind"], s["name"]) for s in sections] == [("score", "lc30.weak"), ("score", "lc30.strong"),
                                                          ("score_compare", "score_folders")]
    md = (out / "report.md").read_text()
    assert "## Score folder: lc30.weak" in md and "## Score folder: lc30.strong" in md
    for sec, known in zip(sections, (weak, strong)):
        fig = sec["data"]["figures"]
        cs = [c for _, c in known.values()]
        assert fig["pass_rates"]["k"] == 3 and fig["pass_rates"]["rates"] == [cs.count(j) for j in range(4)]
        for ds in {d for d, _ in known.values()}:
            mine = [c for d, c in known.values() if d == ds]
            for k in (1, 2, 3):
                assert fig["pass_at_k"][ds][str(k)] == pytest.approx(sum(pass_at(3, c, k) for c in mine) / len(mine))
        for name in sec["plots"].values():
            assert name.startswith(sec["name"] + "_")
            assert_png(out / name)
    side = sections[2]["data"]
    assert side["folders"] == ["lc30.weak", "lc30.strong"]
    for line in side["by_data_source"]:
        for name, known in (("lc30.weak", weak), ("lc30.strong", strong)):
            mine = [c for d, c in known.values() if d == line["data_source"]]
            assert line["folders"][name]["mean_pass_rate"] == pytest.approx(sum(c / 3 for c in mine) / len(mine))
    assert side["figures"]["pass_rates"]["series"] == {
        n: [[c for _, c in known.values()].count(j) for j in range(4)] for n, known in (("lc30.weak", weak),
                                                                                         ("lc30.strong", strong))}
    assert "## Score folders side by side: score_folders" in md and "| data_source | lc30.weak mean pass rate |" in md
    for name in sections[2]["plots"].values():
        assert_png(out / name)


def test_pie_eval_folder_speedups_and_pct_opt(tmp_path):
    gens = tmp_path / "gens.jsonl"
    progs = [{"id": "a", "src_runtime": 6.0, "runtimes": [3.0, None, 1.0]},
             {"id": "b", "src_runtime": 2.0, "runtimes": [None, None, None]},
             {"id": "c", "src_runtime": 4.0, "runtimes": [4.0, 3.8, 2.0]}]
    gens.write_text("".join(json.dumps(p) + "\n" for p in progs))
    folder = tmp_path / "eval"
    e = cli("pie", "eval", "--generations", str(gens), "--out", str(folder), "--no-progress")
    assert e.returncode == 0, e.stdout + e.stderr
    out = tmp_path / "rep"
    r = cli("pie", "plots", str(folder), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    sec = json.loads((out / "report.json").read_text())["sections"][0]
    fig = sec["data"]["figures"]
    speedups = sorted(p["src_runtime"] / t for p in progs for t in p["runtimes"] if t)
    assert fig["speedups"]["values"] == pytest.approx(speedups)
    assert sum(fig["speedups"]["counts"]) == len(speedups)
    # %Opt at k: programs whose best of the first k is >= 1.10x (a: 2.0 from k=1; c: 2.0 only at k=3)
    assert fig["pct_opt"]["k"] == [1, 2, 3]
    assert fig["pct_opt"]["pct_opt"] == pytest.approx([100 / 3, 100 / 3, 200 / 3])
    assert set(sec["plots"]) == {"speedups", "pct_opt"}
    for name in sec["plots"].values():
        assert_png(out / name)


def test_oracle_verify_folder_rejections_by_stage_and_accepted_speedups(tmp_path):
    picked = {"good-0001", "fmt-unclosed-fence", "ce-0002-missing-semicolon", "wa-0004-visible", "slow-0001"}
    lines = [l for l in (ORACLE / "returns.jsonl").read_text().splitlines() if json.loads(l).get("demo_id") in picked]
    returns = tmp_path / "returns.jsonl"
    returns.write_text("\n".join(lines) + "\n")
    folder = tmp_path / "verify"
    v = cli("oracle", "verify", "--seeds", str(ORACLE / "seeds.jsonl"), "--returns", str(returns), "--out",
            str(folder))
    assert v.returncode == 0, v.stdout + v.stderr
    r = cli("oracle", "plots", str(folder))  # default --out: FOLDER/plots
    assert r.returncode == 0, r.stdout + r.stderr
    out = folder / "plots"
    sec = json.loads((out / "report.json").read_text())["sections"][0]
    assert sec["kind"] == "oracle" and "rejections by stage" not in (folder / "report.json").read_text()
    stages: dict[str, int] = {}
    for rec in read_jsonl(folder / "rejected.jsonl"):
        stages[rec["stage"]] = stages.get(rec["stage"], 0) + 1
    assert sec["data"]["figures"]["rejections"] == stages and {"format", "compile", "tests"} <= set(stages)
    accepted = sorted(rec["verification"]["speedup"] for rec in read_jsonl(folder / "verified.jsonl"))
    assert sec["data"]["figures"]["speedups"]["values"] == pytest.approx(accepted) and len(accepted) >= 1
    for name in sec["plots"].values():
        assert_png(out / name)
    refused = cli("report", str(folder), "--out", str(folder))  # would overwrite the folder's own report.json
    assert refused.returncode == 2 and "folder of its own" in refused.stdout


def test_suite_sizes_are_drawn_on_a_log_axis_exactly_when_binned_on_one():
    """The suite-size plot's log-x flag and its bins follow one rule (a range over a factor 20);
    they once disagreed between 20x and 40x (audit): 2-50 cases got log-spaced bins on a linear
    axis, 1-20 linear bins on a log axis."""
    from arbiter.pipelines.report.stats import log_sizes, size_edges

    for sizes, log in (([1, 20], False), ([2, 50], True), ([1, 15], False), ([3, 100], True), ([5], False)):
        edges = size_edges(sizes)
        steps = [b - a for a, b in zip(edges, edges[1:])]
        assert log_sizes(sizes) is log, sizes
        assert (steps[-1] > steps[0] * 1.0001 if len(steps) > 1 else False) is log, (sizes, edges)
