"""``arbiter curate``: the codegen card's goldilocks difficulty filter and English filter, end to end.

A small verl dataset of real stdin problems is scored twice with the real ``arbiter score`` (a "weak" and a
"strong" set of k = 8 completions, right and wrong programs in chosen proportions), then curated with
``arbiter curate goldilocks``. Every expected pass rate is computed here from the right/wrong pattern the test
built, never read back from the output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from arbiter.cli.main import app
from arbiter.pipelines.goldilocks import (
    ENGLISH_MIN, EnglishFilter, detection_text, drop_reason, is_goldilocks, pass_rate, statement_text,
)

runner = CliRunner()
WIDE = {"COLUMNS": "500"}
K = 8


def md(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\n"


INSTRUCTION = ("\n\nRead the input from standard input and write the answer to standard output.\n\nWrite a Python 3 "
               "solution (standard library only). Reply with the complete program in a single markdown code block:\n"
               "```python\n# your code\n```")

# name -> (data_source, index, statement, ground truth (card encodings), right program, wrong programs)
PROBLEMS = {
    "sum": ("code_contests_o", "cco_0",
            "You are given two integers a and b on one line, separated by a single space. Your task is to compute "
            "their sum and print it. Both numbers fit comfortably into a signed 64-bit integer, and the answer "
            "should be printed without any leading zeros or extra spaces.",
            {"inputs": ["1 2\n", "10 -4\n"], "outputs": ["3\n", "6\n"]},
            "a, b = map(int, input().split())\nprint(a + b)",
            ["print(0)", "a, b = map(int, input().split())\nprint(a - b)", "import sys\nsys.exit(3)"]),
    "max": ("code_taco", "1",
            "The first line of the input contains a positive integer n, the number of elements in the array. The "
            "second line contains n integers separated by spaces. Print the largest element of the array. Note that "
            "the elements may be negative, so be careful with the initial value of your running maximum.",
            [{"type": "stdin_stdout", "input": "3\n1 5 2\n", "output": "5\n"},
             {"type": "stdin_stdout", "input": "2\n-1 -7\n", "output": "-1\n"}],
            "input()\nprint(max(map(int, input().split())))",
            ["input()\nprint(min(map(int, input().split())))"]),
    # same extra_info.index as "max", another data_source: only a data_source-qualified join tells them apart
    "rev": ("code_primeintellect", "1",
            "You are given a single word consisting of lowercase English letters. Print the word reversed, that is, "
            "with its letters in the opposite order. The word is not empty and contains at most one hundred letters; "
            "there are no spaces inside the word.",
            [{"type": "stdin_stdout", "input": "abc\n", "output": "cba\n"},
             {"type": "stdin_stdout", "input": "hello\n", "output": "olleh\n"}],
            "print(input()[::-1])",
            ["print(input())"]),
    "vowels": ("code_taco", "3",
               "Given a word made of lowercase English letters, count how many of its letters are vowels. The vowels "
               "are the letters a, e, i, o and u; the letter y is not considered a vowel in this problem. Print the "
               "count as a single integer on its own line.",
               {"inputs": ["banana\n", "sky\n"], "outputs": ["3\n", "0\n"]},
               "print(sum(c in 'aeiou' for c in input()))",
               ["print(0)"]),
    # a goldilocks row whose statement is Chinese (the user turn; the system turn is English)
    "zh": ("code_taco", "4",
           "小明有两个整数 a 和 b，它们写在同一行上，中间用一个空格隔开。请你计算这两个整数的乘积，并把结果输出在单独的一行中。"
           "输入保证两个整数的绝对值都不超过一百万，所以乘积不会超出六十四位有符号整数的范围。请注意负数的情况。",
           {"inputs": ["3 4\n", "-2 5\n"], "outputs": ["12\n", "-10\n"]},
           "a, b = map(int, input().split())\nprint(a * b)",
           ["a, b = map(int, input().split())\nprint(a + b)"]),
    # the weak model solves it every time, the strong one never: floor and ceiling at once
    "parity": ("code_primeintellect", "5",
               "You are given one non-negative integer n on a single line. Print the word even if n is divisible by "
               "two, and print the word odd otherwise. The integer can be very large, up to one thousand decimal "
               "digits, but Python integers handle that without any special care.",
               {"inputs": ["4\n", "7\n"], "outputs": ["even\n", "odd\n"]},
               "print('odd' if int(input()) % 2 else 'even')",
               ["print('even')"]),
    # annotation problems: no completions in the strong folder / 6 completions in the weak folder
    "nostrong": ("code_taco", "6",
                 "Read one integer n from the input and print n plus one. The integer is between minus one billion "
                 "and one billion inclusive, and the answer must be printed as a plain decimal integer on one line "
                 "of the output, with nothing else on that line.",
                 {"inputs": ["1\n"], "outputs": ["2\n"]},
                 "print(int(input()) + 1)", []),
    "six": ("code_taco", "7",
            "Read one integer n from the input and print twice its value. The integer is between minus one billion "
            "and one billion inclusive, and the answer must be printed as a plain decimal integer on one line of "
            "the output, with nothing else on that line.",
            {"inputs": ["3\n"], "outputs": ["6\n"]},
            "print(int(input()) * 2)", []),
}

NO_CODE = "I am not sure how to solve this problem."
# (right answers positions) per problem and model: 1 = the right program, 0 = a wrong one; completion order
WEAK = {
    "sum": [0] * 8,                    # lower 0
    "max": [1, 1, 1, 0, 1, 1, 1, 1],   # lower 7/8 = 0.875: at the inclusive maximum
    "rev": [1] * 8,                    # lower 1 > 0.875: ceiling
    "vowels": [0] * 8,
    "zh": [0, 0, 0, 0, 0, 0, 0, 1],
    "parity": [1] * 8,                 # ceiling ...
    "nostrong": [0] * 8,
    "six": [0] * 6,                    # 6 completions where the others have 8
}
STRONG = {
    "sum": [0, 0, 0, 0, 0, 1, 0, 0],   # upper 1/8 = 0.125: at the inclusive minimum
    "max": [1] * 8,
    "rev": [1] * 8,
    "vowels": [0] * 8,                 # upper 0 < 0.125: floor
    "zh": [1, 1, 1, 0, 1, 1, 1, 1],
    "parity": [0] * 8,                 # ... and floor
    "six": [0] * 8,
}


def verl_row(name: str) -> dict:
    ds, index, statement, gt, _, _ = PROBLEMS[name]
    prompt = [{"role": "user", "content": statement + INSTRUCTION}]
    if ds != "code_contests_o":  # DeepCoder rows carry a system + user pair (the card)
        prompt.insert(0, {"role": "system", "content": "You are a helpful programming assistant. Think step by step "
                                                       "and answer with one Python code block."})
    return {"data_source": ds, "prompt": prompt, "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": json.dumps(gt, ensure_ascii=False)},
            "extra_info": {"index": index, "id": f"{ds.upper()}_{index}"}}


def responses(name: str, pattern: list[int]) -> list[str]:
    _, _, _, _, right, wrongs = PROBLEMS[name]
    out = []
    for i, ok in enumerate(pattern):
        if ok:
            out.append(md(right))
        elif not wrongs or i == 7:
            out.append(NO_CODE)                      # FORMAT_ERROR
        else:
            out.append(md(wrongs[i % len(wrongs)]))  # WA or RE
    return out


def expected_annotation(name: str) -> dict:
    lower = [float(x) for x in WEAK[name]]
    upper = [float(x) for x in STRONG[name]]
    return {"lower_scores": lower, "lower_pass_rate": sum(WEAK[name]) / len(WEAK[name]),
            "upper_scores": upper, "upper_pass_rate": sum(STRONG[name]) / len(STRONG[name])}


def key(name: str) -> str:
    return f"{PROBLEMS[name][0]}:{PROBLEMS[name][1]}"


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n"
                            for r in records), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def flat(output: str) -> str:
    return " ".join(output.split())


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """The dataset (Parquet) and the weak/strong `arbiter score` folders, made once by the real CLI."""
    root = tmp_path_factory.mktemp("goldilocks")
    dataset = root / "rows.parquet"
    pq.write_table(pa.Table.from_pylist([verl_row(n) for n in PROBLEMS]), dataset)
    folders = {}
    for model, patterns in (("weak", WEAK), ("strong", STRONG)):
        # records name rows by data_source + index: "1" alone is ambiguous (code_taco and code_primeintellect)
        comp = write_jsonl(root / f"{model}.jsonl", [
            {"data_source": PROBLEMS[n][0], "index": PROBLEMS[n][1], "responses": responses(n, p)}
            for n, p in patterns.items()])
        out = root / f"score-{model}"
        result = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(comp), "--out", str(out),
                                     "--quiet", "--workers", "2"])
        assert result.exit_code == 0, result.output
        folders[model] = out
    return root, dataset, folders["weak"], folders["strong"]


KEPT = {"sum", "max"}


def test_goldilocks_keeps_exactly_the_boundary_rows_with_hand_computed_annotations(scored, tmp_path):
    root, dataset, weak, strong = scored
    # the verdicts are real: e.g. the wrong "max" program is a WA, the exit(3) "sum" program an RE
    verdicts = {v["key"]: v["verdict"] for v in read_jsonl(weak / "verdicts.jsonl")}
    assert verdicts[f"{key('max')}#3"] == "WA" and verdicts[f"{key('sum')}#2"] == "RE"
    assert verdicts[f"{key('sum')}#7"] == "FORMAT_ERROR" and verdicts[f"{key('rev')}#0"] == "AC"

    out = tmp_path / "kept.parquet"
    result = runner.invoke(app, ["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(weak),
                                 "--strong", str(strong), "--out", str(out), "--quiet"], env=WIDE)
    text = flat(result.output)
    # exit 1: two rows have no usable annotation (reported, not kept, never scored 0)
    assert result.exit_code == 1, result.output
    assert "goldilocks by data_source" in text and "overall" in text
    assert f"{key('nostrong')} upper: missing" in text and f"{key('six')} lower: count_mismatch" in text

    rows = pq.read_table(out).to_pylist()
    assert [(r["data_source"], r["extra_info"]["index"]) for r in rows] == [PROBLEMS["sum"][:2], PROBLEMS["max"][:2]]
    for r, name in zip(rows, ["sum", "max"]):
        assert r == {**verl_row(name), "extra_info": {**verl_row(name)["extra_info"], **expected_annotation(name)}}
    assert rows[0]["extra_info"]["upper_pass_rate"] == 0.125 and rows[1]["extra_info"]["lower_pass_rate"] == 0.875

    decisions = {d["row_key"]: d for d in read_jsonl(tmp_path / "kept.rows.jsonl")}
    assert {k_: d["decision"] for k_, d in decisions.items()} == {
        key("sum"): "kept", key("max"): "kept", key("rev"): "ceiling", key("vowels"): "floor",
        key("zh"): "non_english", key("parity"): "floor+ceiling", key("nostrong"): "missing_annotation",
        key("six"): "missing_annotation"}
    zh = decisions[key("zh")]
    assert zh["english_confidence"] < ENGLISH_MIN
    assert (zh["lower_pass_rate"], zh["upper_pass_rate"]) == (1 / 8, 7 / 8)
    assert decisions[key("sum")]["english_confidence"] >= ENGLISH_MIN
    assert (decisions[key("rev")]["lower_pass_rate"], decisions[key("rev")]["upper_pass_rate"]) == (1.0, 1.0)

    report = json.loads((tmp_path / "kept.report.json").read_text())
    assert report["options"]["k_lower"] == K and report["options"]["k_upper"] == K
    o = report["overall"]
    assert (o["candidates"], o["missing_annotation"], o["goldilocks"], o["dropped_floor"], o["dropped_ceiling"],
            o["dropped_floor_and_ceiling"], o["dropped_non_english"], o["kept"]) == (8, 2, 3, 2, 2, 1, 1, 2)
    assert o["mean_lower_pass_rate"] == (0 + 7 / 8) / 2 and o["mean_upper_pass_rate"] == (1 / 8 + 1) / 2
    by = report["by_data_source"]
    assert set(by) == {"code_contests_o", "code_taco", "code_primeintellect"}
    assert (by["code_contests_o"]["candidates"], by["code_contests_o"]["kept"]) == (1, 1)
    taco = by["code_taco"]
    assert (taco["candidates"], taco["kept"], taco["dropped_floor"], taco["dropped_non_english"],
            taco["missing_annotation"]) == (5, 1, 1, 1, 2)
    assert by["code_primeintellect"]["kept"] == 0 and by["code_primeintellect"]["dropped_ceiling"] == 2
    assert taco["share_of_kept"] == 0.5 and taco["kept_per_candidate"] == 1 / 5
    problems = {(p["row_key"], p["side"]): p["reason"] for p in report["annotation_problems"]}
    assert problems == {(key("nostrong"), "upper"): "missing", (key("six"), "lower"): "count_mismatch"}

    # thresholds are options; the English filter can be turned off (the Chinese row is then kept)
    loose = tmp_path / "loose.jsonl"
    result = runner.invoke(app, ["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(weak),
                                 "--strong", str(strong), "--out", str(loose), "--quiet", "--no-english-filter",
                                 "--lower-max", "1", "--upper-min", "0.2"], env=WIDE)
    assert result.exit_code == 1, result.output
    kept = {(r["data_source"], r["extra_info"]["index"]) for r in read_jsonl(loose)}
    # lower <= 1 always; upper >= 0.2: max (1), rev (1), zh (7/8); not sum (1/8), vowels (0), parity (0)
    assert kept == {PROBLEMS[n][:2] for n in ("max", "rev", "zh")}

    # --k 6: every 8-completion row is now the odd one out, and the 6-completion row is fine on the weak side
    k6 = tmp_path / "k6.jsonl"
    result = runner.invoke(app, ["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(weak),
                                 "--strong", str(strong), "--out", str(k6), "--quiet", "--k", "6"], env=WIDE)
    assert result.exit_code == 1 and read_jsonl(k6) == []
    report = json.loads((tmp_path / "k6.report.json").read_text())
    assert report["overall"]["missing_annotation"] == 8


def test_join_checks_ground_truth_bad_rows_and_jsonl_inputs(scored, tmp_path):
    """The same score folders, a JSONL copy of the dataset with one changed ground truth, one row that does
    not parse and one repeated key: each is reported, the rest is curated, Parquet written from JSONL."""
    root, dataset, weak, strong = scored
    rows = [verl_row(n) for n in PROBLEMS]
    changed = rows[1]                                   # "max": one expected output edited after scoring
    changed["reward_model"]["ground_truth"] = json.dumps([{"type": "stdin_stdout", "input": "1\n9\n", "output": "9\n"}])
    bad = {"data_source": "code_taco", "prompt": "not a list", "extra_info": {"index": "bad"}}
    d = write_jsonl(tmp_path / "rows.jsonl", [rows[0], bad, *rows[1:], rows[0]])
    for suffix in ("parquet", "jsonl"):
        out = tmp_path / f"kept.{suffix}"
        result = runner.invoke(app, ["curate", "goldilocks", "--dataset", str(d), "--weak", str(weak),
                                     "--strong", str(strong), "--out", str(out), "--quiet"], env=WIDE)
        assert result.exit_code == 1, result.output
        kept = pq.read_table(out).to_pylist() if suffix == "parquet" else read_jsonl(out)
        assert [r["extra_info"]["index"] for r in kept] == ["cco_0"]
        assert kept[0]["extra_info"] == {**rows[0]["extra_info"], **expected_annotation("sum")}
        report = json.loads((tmp_path / "kept.report.json").read_text())
        reasons = {(p["row_key"], p["side"]): p["reason"] for p in report["annotation_problems"]}
        assert reasons[(key("max"), "lower")] == reasons[(key("max"), "upper")] == "ground_truth_changed"
        assert [b["row_key"] for b in report["bad_rows"]] == ["code_taco:bad"] and "prompt" in report["bad_rows"][0]["error"]
        assert [b["row_key"] for b in report["duplicate_rows"]] == [key("sum")]
        assert report["overall"]["bad_rows"] == 1 and report["overall"]["duplicate_rows"] == 1
        assert report["overall"]["candidates"] == 8 and report["overall"]["kept"] == 1
        assert any("another dataset file" in w for w in report["warnings"])


def test_sandbox_errors_are_reported_never_scored_0(scored, tmp_path):
    """A strong folder scored with a broken sandbox (real SANDBOX_ERRORs: the sandbox's Python is missing):
    its rows have responses that were never judged, so they get no pass rate at all."""
    root, dataset, weak, strong = scored
    comp = write_jsonl(tmp_path / "strong.jsonl", [
        {"data_source": PROBLEMS[n][0], "index": PROBLEMS[n][1], "responses": responses(n, STRONG[n])}
        for n in ("sum", "six")])
    broken = tmp_path / "score-broken"
    result = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(comp), "--out", str(broken),
                                 "--quiet"], env={"ARBITER_SANDBOX_PYTHON": "/nonexistent/python3"})
    assert result.exit_code == 1, result.output   # SANDBOX_ERRORs, not recorded
    out = tmp_path / "kept.jsonl"
    result = runner.invoke(app, ["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(weak),
                                 "--strong", str(broken), "--out", str(out), "--quiet"], env=WIDE)
    assert result.exit_code == 1, result.output
    assert read_jsonl(out) == []
    report = json.loads((tmp_path / "kept.report.json").read_text())
    reasons = {(p["row_key"], p["side"]): p["reason"] for p in report["annotation_problems"]}
    # "sum": 7 of its 8 strong responses needed the sandbox; "six" had only FORMAT_ERRORs (judged without it)
    assert reasons[(key("sum"), "upper")] == "sandbox_error"
    assert (key("six"), "upper") not in reasons and reasons[(key("six"), "lower")] == "count_mismatch"
    assert {reasons[(key(n), "upper")] for n in PROBLEMS if n not in ("sum", "six")} == {"missing"}
    assert report["overall"]["missing_annotation"] == len(PROBLEMS) and report["overall"]["kept"] == 0


def test_bad_inputs_exit_2_naming_the_file(scored, tmp_path):
    root, dataset, weak, strong = scored
    empty = tmp_path / "empty"
    empty.mkdir()
    not_json = tmp_path / "rows.jsonl"
    not_json.write_text(json.dumps(verl_row("sum")) + "\n{oops\n")
    torn = tmp_path / "torn"
    torn.mkdir()
    (torn / "verdicts.jsonl").write_text('{"row_key": "code_taco:1", "response_idx": 0, "score": 1.0}\n{"row_')
    base = ["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(weak), "--strong", str(strong)]
    cases = [
        (base + ["--out", str(tmp_path / "k.csv")], ["unknown output format", "k.csv"]),
        (base + ["--out", str(tmp_path / "nodir" / "k.jsonl")], ["does not exist"]),
        (["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(tmp_path / "nope"), "--strong", str(strong),
          "--out", str(tmp_path / "k.jsonl")], ["--weak", "nope", "not a folder"]),
        (["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(weak), "--strong", str(empty),
          "--out", str(tmp_path / "k.jsonl")], ["--strong", "no verdicts.jsonl"]),
        (["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(torn), "--strong", str(strong),
          "--out", str(tmp_path / "k.jsonl")], ["--weak", "verdicts.jsonl line 2"]),
        (["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(weak), "--strong", str(weak),
          "--out", str(tmp_path / "k.jsonl")], ["same folder"]),
        (["curate", "goldilocks", "--dataset", str(not_json), "--weak", str(weak), "--strong", str(strong),
          "--out", str(tmp_path / "k.jsonl")], ["--dataset", "rows.jsonl line 2", "not valid JSON"]),
        (base + ["--out", str(tmp_path / "k.jsonl"), "--upper-min", "1.5"], ["--upper-min", "[0, 1]"]),
    ]
    for args, needles in cases:
        result = runner.invoke(app, args, env=WIDE)
        text = flat(result.output)
        assert result.exit_code == 2, (args, result.output)
        assert "error:" in text and "Traceback" not in result.output
        for needle in needles:
            assert needle in text, (needle, result.output)
    assert not (tmp_path / "k.jsonl").exists() and not list(tmp_path.glob("*.partial"))


def test_audit_on_curated_output_and_on_inconsistent_annotations(scored, tmp_path):
    root, dataset, weak, strong = scored
    kept = tmp_path / "kept.parquet"
    runner.invoke(app, ["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(weak), "--strong", str(strong),
                        "--out", str(kept), "--quiet"])
    clean = runner.invoke(app, ["curate", "audit", "--dataset", str(kept)], env=WIDE)
    assert clean.exit_code == 0, clean.output
    assert "2 rows audited; 2 consistent and kept; 0 with findings" in flat(clean.output)

    def annotated(name: str, lower: list[float], upper: list[float], stored_lower: float | None = None) -> dict:
        r = verl_row(name)
        r["extra_info"].update(lower_scores=lower, upper_scores=upper,
                               lower_pass_rate=sum(x == 1.0 for x in lower) / len(lower) if stored_lower is None
                               else stored_lower, upper_pass_rate=sum(x == 1.0 for x in upper) / len(upper))
        return r

    z, o = 0.0, 1.0
    rows = {
        "ok": annotated("sum", [z] * 8, [z, o, z, z, z, z, z, z]),                       # consistent, kept
        "mismatch": annotated("max", [o, o, z, z, z, z, z, z], [o] * 8, stored_lower=0.5),  # 2/8 stored as 0.5
        "count": annotated("rev", [z] * 7, [o] * 8),                                     # 7 lower scores
        "ceiling": annotated("vowels", [o] * 8, [o] * 8),                                # consistent, not kept
        "floor": annotated("parity", [z] * 8, [z] * 8),
        "zh": annotated("zh", [z] * 8, [o] * 8),                                         # goldilocks, Chinese
        "partial": annotated("six", [0.5] + [z] * 7, [o] * 8),                           # prime_code-like partial
    }
    missing = verl_row("nostrong")
    missing["extra_info"].update(lower_scores=[z] * 8, lower_pass_rate=0.0)           # no upper annotation
    d = write_jsonl(tmp_path / "annotated.jsonl", [*rows.values(), missing])
    report = tmp_path / "audit.json"
    result = runner.invoke(app, ["curate", "audit", "--dataset", str(d), "--report", str(report)], env=WIDE)
    assert result.exit_code == 1, result.output
    found = {f["row_key"]: f for f in json.loads(report.read_text())["findings"]}
    assert {k_: sorted(f["findings"]) for k_, f in found.items()} == {
        key("max"): ["pass_rate_mismatch"],
        key("rev"): ["count_mismatch"],
        key("vowels"): ["ceiling"],
        key("parity"): ["floor"],
        key("zh"): ["non_english"],
        key("six"): ["non_binary_scores"],
        key("nostrong"): ["missing_fields"],
    }
    assert found[key("max")]["recomputed_lower_pass_rate"] == 2 / 8 and found[key("max")]["stored"]["lower_pass_rate"] == 0.5
    assert "7 lower_scores, expected 8" in found[key("rev")]["detail"]["count_mismatch"]
    assert found[key("six")]["recomputed_lower_pass_rate"] == 0.0   # 0.5 is not a pass
    assert "upper_pass_rate, upper_scores" in found[key("nostrong")]["detail"]["missing_fields"]
    audit = json.loads(report.read_text())
    assert audit["rows"] == 8 and audit["clean"] == 1 and audit["k"] == {"lower": 8, "upper": 8}
    assert audit["counts"]["overall"]["inconsistent"] == 4
    assert audit["counts"]["by_data_source"]["code_contests_o"] == {"rows": 1, "clean": 1}
    text = flat(result.output)
    assert "8 rows audited; 1 consistent and kept; 7 with findings" in text and "pass rate mismatch" in text

    # without the English filter the Chinese row is clean
    result = runner.invoke(app, ["curate", "audit", "--dataset", str(d), "--no-english-filter", "--report", str(report)])
    assert result.exit_code == 1 and key("zh") not in {f["row_key"] for f in json.loads(report.read_text())["findings"]}


def test_flag_boundaries_and_pass_rates():
    assert is_goldilocks(0.875, 0.125) and is_goldilocks(0.0, 1.0)
    assert not is_goldilocks(7 / 8 + 1 / 8, 1.0) and not is_goldilocks(0.0, 0.0)
    assert not is_goldilocks(0.875 + 1e-12, 0.5) and not is_goldilocks(0.5, 0.125 - 1e-12)
    assert is_goldilocks(1.0, 0.2, lower_max=1.0, upper_min=0.2) and not is_goldilocks(0.5, 0.5, upper_min=0.75)
    assert [drop_reason(*p) for p in ((1.0, 1.0), (0.0, 0.0), (1.0, 0.0), (0.5, 0.5))] == \
        ["ceiling", "floor", "floor+ceiling", ""]
    for c in range(9):
        scores = [1.0] * c + [0.0] * (8 - c)
        assert pass_rate(scores) == c / 8 == sum(scores) / 8
    assert pass_rate([0.5, 1.0]) == 0.5   # a partial score is not a pass
    for bad in ((float("nan"), 0.5), (0.5, 1.5), (-0.1, 0.5), (True, 0.5)):
        with pytest.raises(ValueError):
            is_goldilocks(*bad)
    with pytest.raises(ValueError):
        pass_rate([])


RUSSIAN = ("У Васи есть массив из n целых чисел. Он хочет найти максимальную сумму элементов среди всех непрерывных "
           "подмассивов. Помогите ему вычислить это значение. Во входных данных в первой строке записано целое число "
           "n, во второй строке записаны n целых чисел.")


def test_english_filter_on_real_statements(shared):
    english = EnglishFilter()
    statements = [p.read_text(encoding="utf-8") for p in sorted((shared / "realdata" / "coderl_apps" / "train").glob("*/question.txt"))]
    assert len(statements) >= 3
    for s in statements:  # real APPS statements (LaTeX, sample I/O and all)
        assert english.is_english(s), s[:80]
    chinese = PROBLEMS["zh"][2]
    for s in (chinese, RUSSIAN, chinese + INSTRUCTION, RUSSIAN + INSTRUCTION):
        assert not english.is_english(s)
        assert english.confidence(detection_text(s)) < 0.5
    # fenced code is not prose: a Russian statement followed by a long program is still Russian
    program = "```python\n" + "\n".join(f"def solve_case_{i}(values, total, answer):\n    return max(values) + total"
                                        for i in range(30)) + "\n```"
    assert detection_text(RUSSIAN + "\n\n" + program).strip() == RUSSIAN
    assert not english.is_english(RUSSIAN + "\n\n" + program)
    assert detection_text(program) == program             # nothing but code: read whole
    # batch and single confidences agree; the threshold is an option
    texts = [statements[0], RUSSIAN]
    assert english.confidences(texts) == [english.confidence(t) for t in texts]
    assert EnglishFilter(0.0).is_english(RUSSIAN)
    with pytest.raises(ValueError):
        EnglishFilter(1.5)


def test_statement_is_the_last_user_message():
    prompt = [{"role": "system", "content": "system"}, {"role": "user", "content": "first"},
              {"role": "assistant", "content": "a"}, {"role": "user", "content": "second"}]
    assert statement_text(prompt) == "second"
    assert statement_text([{"role": "system", "content": "only system"}]) == "" and statement_text([]) == ""
