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
    ENGLISH_MIN, EnglishFilter, detection_text, drop_reason, is_goldilocks, pass_rate, statement_text, template_lines,
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
    overall = next(line for line in result.output.splitlines() if "overall" in line)
    cells = [c.strip() for c in overall.replace("┃", "│").split("│") if c.strip()][1:]
    # candidates, no annot., vacuous, floor, ceiling, both, goldilocks: the drops add up (new user)
    assert [int(c) for c in cells[:7]] == [8, 2, 0, 1, 1, 1, 3] and sum(map(int, cells[1:7])) == int(cells[0])
    assert f"{key('nostrong')} upper: missing" in text and f"{key('six')} lower: count_mismatch" in text

    rows = pq.read_table(out).to_pylist()
    assert [(r["data_source"], r["extra_info"]["index"]) for r in rows] == [PROBLEMS["sum"][:2], PROBLEMS["max"][:2]]
    for r, name in zip(rows, ["sum", "max"]):
        want = verl_row(name)  # the card's reward_model: method written (null) in Parquet
        assert r == {**want, "reward_model": {**want["reward_model"], "method": None},
                     "extra_info": {**want["extra_info"], **expected_annotation(name)}}
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


def test_a_line_that_is_not_json_is_a_bad_row_and_the_batch_goes_on(scored, tmp_path):
    """A junk line among good rows: ``curate goldilocks`` and ``curate audit`` report it as a ``bad_row``
    naming its line and go on with the rows after it."""
    root, dataset, weak, strong = scored
    rows = tmp_path / "rows.jsonl"
    rows.write_text(f"{json.dumps(verl_row('sum'))}\n{{oops\n{json.dumps(verl_row('max'))}\n")
    kept = tmp_path / "kept.jsonl"
    result = runner.invoke(app, ["curate", "goldilocks", "--dataset", str(rows), "--weak", str(weak), "--strong",
                                 str(strong), "--out", str(kept), "--quiet", "--no-english-filter"], env=WIDE)
    assert result.exit_code == 1, result.output
    assert [r["extra_info"]["index"] for r in read_jsonl(kept)] == ["cco_0", "1"]
    bad_rows = json.loads((tmp_path / "kept.report.json").read_text())["bad_rows"]
    assert [b["position"] for b in bad_rows] == [1] and "rows.jsonl line 2: not valid JSON" in bad_rows[0]["error"]
    decisions = [r["decision"] for r in read_jsonl(tmp_path / "kept.rows.jsonl")]
    assert decisions == ["kept", "bad_row", "kept"]

    annotated = kept.read_text().splitlines()
    audited = tmp_path / "annotated.jsonl"
    audited.write_text(f"{annotated[0]}\n[1, 2]\n{annotated[1]}\n")
    report = tmp_path / "audit.json"
    result = runner.invoke(app, ["curate", "audit", "--dataset", str(audited), "--no-english-filter",
                                 "--report", str(report)], env=WIDE)
    assert result.exit_code == 1, result.output
    findings = json.loads(report.read_text())["findings"]
    assert [(f["position"], f["findings"]) for f in findings] == [(1, ["bad_row"])]
    assert "annotated.jsonl line 2: expected a JSON object" in findings[0]["detail"]["bad_row"]
    assert "3 rows audited; 2 consistent and kept; 1 with findings" in flat(result.output)


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


# ---------------------------------------------------------------- helpers for the datasets below

DOUBLE_GT = {"inputs": ["3\n", "-5\n"], "outputs": ["6\n", "-10\n"]}
DOUBLE_RIGHT = md("print(2 * int(input()))")
DOUBLE_WRONG = md("print(int(input()))")


def double_responses(right: int, k: int = K) -> list[str]:
    """``right`` right programs, then wrong ones (the pass rate is right / k)."""
    return [DOUBLE_RIGHT] * right + [DOUBLE_WRONG] * (k - right)


def score_folder(dataset: Path, records: list[dict], out: Path, *extra: str) -> Path:
    """A real `arbiter score` run of ``records`` against ``dataset`` into ``out``."""
    comp = write_jsonl(out.with_name(out.name + ".completions.jsonl"), records)
    result = runner.invoke(app, ["score", "--dataset", str(dataset), "--completions", str(comp), "--out", str(out),
                                 "--quiet", "--workers", "2", *extra])
    assert result.exit_code == 0, result.output
    return out


def curate(dataset: Path, weak: Path, strong: Path, out: Path, *extra: str):
    return runner.invoke(app, ["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(weak),
                               "--strong", str(strong), "--out", str(out), "--quiet", *extra], env=WIDE)


def decisions_of(out: Path) -> dict[str, dict]:
    stem = out.name[: -len(out.suffix)]
    return {d["row_key"]: d for d in read_jsonl(out.with_name(f"{stem}.rows.jsonl"))}


def report_of(out: Path) -> dict:
    stem = out.name[: -len(out.suffix)]
    return json.loads(out.with_name(f"{stem}.report.json").read_text(encoding="utf-8"))


def double_row(ds: str, index, statement: str | None, *, system: str | None = None, gt=None, **extra_info) -> dict:
    prompt = []
    if system is not None:
        prompt.append({"role": "system", "content": system})
    if statement is not None:
        prompt.append({"role": "user", "content": statement})
    ei = dict(extra_info)
    if index is not None:
        ei = {"index": index, **ei}
    return {"data_source": ds, "prompt": prompt, "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": json.dumps(gt or DOUBLE_GT)}, "extra_info": ei}


EN_DOUBLE = ("You are given a single integer n on one line of standard input. Your task is to compute twice the value "
             "of n and print it on a single line. The integer n satisfies the constraint that its absolute value does "
             "not exceed one billion, so the answer fits comfortably in a sixty four bit signed integer type.")
ZH_DOUBLE = "给定一个整数 n，请计算 n 的两倍并输出。输入只有一行，包含一个整数 n。输出一行，即 2n 的值。保证 n 的绝对值不超过十亿。"
RU_DOUBLE = ("Дано одно целое число n. Выведите удвоенное значение n. Во входных данных одна строка, содержащая число "
             "n. Гарантируется, что модуль n не превосходит миллиарда.")

# The DeepCoder (PrimeIntellect) wrapper, as DeepCoder's preprocessing writes it around a statement
DC_PRE = "Solve the following coding problem using the programming language python:\n\n"
DC_POST = ("\n\nThe input will be stdin and you should print your solution to stdout\n\n\n"
           "Now solve the problem and return the code.")
# The same sentences inline, on the statement's own line (the open-r1 copy of PrimeIntellect)
DC_INLINE_PRE = "Solve the following coding problem using the programming language python: "
DC_INLINE_POST = " The input will be stdin and you should print your solution to stdout Now solve the problem and return the code."
# A Code-Contests-O-like fixed I/O instruction block, repeated by every row of the source: template lines
CCO_BLOCK = ("\n\nInput is given from standard input and output must be written to standard output.\n"
             "Your program will be run against many hidden test cases, all of which must pass.\n"
             "Write an efficient Python 3 program using only the standard library and reply with it in a single "
             "markdown code block.")
# LiveCodeBench's stdin instruction (DeepCoder's code_lcbv5 rows), as rllm writes it
LCB_BLOCK = ("\n\n### Format: Read the inputs from stdin solve the problem and write the answer to stdout (do not directly "
             "test on the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python "
             "program runs, it reads the inputs, runs the algorithm and writes output to STDOUT.\n```python\n"
             "# YOUR CODE HERE\n```\n\n### Answer: (use the provided format with backticks)\n\n")
DC_SYSTEM = "You are a helpful programming assistant."


# ---------------------------------------------------------------- 1 + 7: the English filter reads the statement


@pytest.fixture(scope="module")
def wrapped(tmp_path_factory):
    """Goldilocks rows (weak 1/8, strong 4/8) whose statements are English, Chinese or Russian, wrapped in the
    DeepCoder instruction (own lines and inline) or a Code-Contests-O-like instruction block, plus a row with no
    user message; scored for real."""
    root = tmp_path_factory.mktemp("wrapped")
    rows = {
        "en_dc": double_row("code_primeintellect", "dc_en", DC_PRE + EN_DOUBLE + DC_POST, system=DC_SYSTEM),
        "zh_dc": double_row("code_primeintellect", "dc_zh", DC_PRE + ZH_DOUBLE + DC_POST, system=DC_SYSTEM),
        "ru_dc": double_row("code_primeintellect", "dc_ru", DC_PRE + RU_DOUBLE + DC_POST, system=DC_SYSTEM),
        "ru_inline": double_row("code_primeintellect", "dc_ru_inline", DC_INLINE_PRE + RU_DOUBLE + DC_INLINE_POST,
                                system=DC_SYSTEM),
        "zh_lcb": double_row("code_lcbv5", "lcb_zh", "### Question:\n" + ZH_DOUBLE + LCB_BLOCK, system=DC_SYSTEM),
        "en_inline": double_row("code_primeintellect", "dc_en_inline", DC_INLINE_PRE + EN_DOUBLE + DC_INLINE_POST,
                                system=DC_SYSTEM),
        "en_cco": double_row("code_contests_o", "cco_en", EN_DOUBLE + CCO_BLOCK),
        "en_cco2": double_row("code_contests_o", "cco_en2", EN_DOUBLE.replace("twice", "two times") + CCO_BLOCK),
        "zh_cco": double_row("code_contests_o", "cco_zh", ZH_DOUBLE + CCO_BLOCK),
        "ru_cco": double_row("code_contests_o", "cco_ru", RU_DOUBLE + CCO_BLOCK),
        "no_user": double_row("code_primeintellect", "dc_none", None, system=DC_SYSTEM + " " + EN_DOUBLE),
    }
    dataset = write_jsonl(root / "rows.jsonl", list(rows.values()))
    folders = [score_folder(dataset, [{"key": f"{r['data_source']}:{r['extra_info']['index']}",
                                       "responses": double_responses(right)} for r in rows.values()],
                            root / f"score-{name}") for name, right in (("weak", 1), ("strong", 4))]
    return root, dataset, rows, folders[0], folders[1]


def wkey(rows: dict, name: str) -> str:
    return f"{rows[name]['data_source']}:{rows[name]['extra_info']['index']}"


def test_english_filter_reads_the_statement_not_its_english_wrapper(wrapped, tmp_path):
    root, dataset, rows, weak, strong = wrapped
    english = EnglishFilter()
    # read whole (fenced blocks removed, nothing else), the English instructions make these read as English
    for name in ("ru_dc", "ru_inline", "zh_lcb", "zh_cco", "ru_cco"):
        assert english.confidence(_FENCE_FREE(statement_text(rows[name]["prompt"]))) >= ENGLISH_MIN, name

    out = tmp_path / "kept.jsonl"
    result = curate(dataset, weak, strong, out)
    assert result.exit_code == 0, result.output
    d = decisions_of(out)
    non_english = ("zh_dc", "ru_dc", "ru_inline", "zh_lcb", "zh_cco", "ru_cco")
    assert {n: d[wkey(rows, n)]["decision"] for n in rows} == {
        "en_dc": "kept", "en_inline": "kept", "en_cco": "kept", "en_cco2": "kept", "no_user": "no_statement",
        **{n: "non_english" for n in non_english}}
    for n in non_english:
        assert d[wkey(rows, n)]["english_confidence"] < 0.5, n
    for n in ("en_dc", "en_inline", "en_cco", "en_cco2"):
        assert d[wkey(rows, n)]["english_confidence"] >= ENGLISH_MIN, n
    assert "english_confidence" not in d[wkey(rows, "no_user")]
    assert [r["extra_info"]["index"] for r in read_jsonl(out)] == ["dc_en", "dc_en_inline", "cco_en", "cco_en2"]
    report = report_of(out)
    o = report["overall"]
    assert (o["candidates"], o["goldilocks"], o["dropped_non_english"], o["dropped_no_statement"], o["kept"]) == \
        (11, 11, 6, 1, 4)
    # template lines: the Code-Contests-O block (4 of 11 rows), and the statements that 3 rows repeat (the same
    # problem from three sources): those rows keep their rarest lines, so the Chinese ones are still Chinese. The
    # DeepCoder / LiveCodeBench sentences are known and removed before lines are counted.
    lines = {t["line"]: t["rows"] for t in report["template_lines"]["lines"]}
    assert {line: n for line, n in lines.items() if n != 3} == {line.strip(): 4 for line in CCO_BLOCK.strip().split("\n")}
    assert lines[ZH_DOUBLE] == lines[RU_DOUBLE] == 3 and report["template_lines"]["count"] == 6
    assert "template line" in report["options"]["english_detector"]
    assert "no stmt." in flat(result.output)

    # audit reads statements the same way: the annotated rows (no filter) audited
    everything = tmp_path / "all.jsonl"
    assert curate(dataset, weak, strong, everything, "--no-english-filter").exit_code == 0
    audit_report = tmp_path / "audit.json"
    result = runner.invoke(app, ["curate", "audit", "--dataset", str(everything), "--report", str(audit_report)],
                           env=WIDE)
    assert result.exit_code == 1, result.output
    found = {f["row_key"]: f["findings"] for f in json.loads(audit_report.read_text())["findings"]}
    assert found == {**{wkey(rows, n): ["non_english"] for n in non_english}, wkey(rows, "no_user"): ["no_statement"]}


#: A genuine English statement, Codeforces-shaped, that lingua scores below the card's 0.999 (about 0.97)
POLYCARP = ("Polycarp has a string s of length n. He wants to delete exactly k characters. Output the "
            "lexicographically minimal string.")


def test_english_near_misses_are_listed_in_the_summary_and_the_report(tmp_path):
    """The card's 0.999 drops a genuine English statement at 0.97: such rows (English the likelier reading, >= 0.5)
    are named in the run's summary and listed in the report for a curator to look at; clearly foreign ones are
    not. Before, they were only a count among the non-English drops."""
    rows = [double_row("code_primeintellect", "near", DC_PRE + POLYCARP + DC_POST, system=DC_SYSTEM),
            double_row("code_primeintellect", "zh", DC_PRE + ZH_DOUBLE + DC_POST, system=DC_SYSTEM),
            double_row("code_primeintellect", "en", DC_PRE + EN_DOUBLE + DC_POST, system=DC_SYSTEM)]
    dataset = write_jsonl(tmp_path / "rows.jsonl", rows)
    folders = [score_folder(dataset, [{"key": f"{r['data_source']}:{r['extra_info']['index']}",
                                       "responses": double_responses(right)} for r in rows], tmp_path / f"s-{name}")
               for name, right in (("weak", 1), ("strong", 4))]
    out = tmp_path / "kept.jsonl"
    result = curate(dataset, *folders, out)
    assert result.exit_code == 0, result.output
    d = decisions_of(out)
    near = d["code_primeintellect:near"]
    assert near["decision"] == "non_english" and 0.5 <= near["english_confidence"] < ENGLISH_MIN
    assert d["code_primeintellect:zh"]["english_confidence"] < 0.5 and d["code_primeintellect:en"]["decision"] == "kept"
    (listed,) = report_of(out)["english_near_misses"]
    assert listed["row_key"] == "code_primeintellect:near" and listed["english_confidence"] == near["english_confidence"]
    assert listed["statement_start"].startswith("Polycarp has a string")
    said = flat(result.output)
    assert "1 row(s) dropped by the English filter although English is the likelier reading" in said
    assert f"near miss code_primeintellect:near English {near['english_confidence']:.3f}: Polycarp" in said


def _FENCE_FREE(text: str) -> str:
    """The statement as the filter used to read it: fenced blocks removed, nothing else."""
    import re

    return re.sub(r"```[^\n]*\n.*?```", "\n", text, flags=re.S)


def test_template_lines_and_detection_text():
    block = ["Read the input from standard input.", "Print the answer."]
    stmts = [f"Statement number {i} about arrays.\n" + "\n".join(block) for i in range(3)]
    assert template_lines(stmts) == dict.fromkeys(block, 3)                       # 3 rows, 100%
    assert template_lines(stmts[:2]) == {}                                        # only 2 rows
    assert template_lines(stmts + [f"other {i}" for i in range(146)]) == dict.fromkeys(block, 3)  # 3 of 149: > 2%
    assert template_lines(stmts + [f"other {i}" for i in range(148)]) == {}       # 3 of 151 rows: < 2%
    # a fenced block's lines and known wrapper sentences are not counted; spaces around a line do not matter
    assert template_lines([f"Text {i}\n```python\nimport sys\n```\n   Print the answer.  \n" + DC_POST
                           for i in range(3)]) == {"Print the answer.": 3}
    assert detection_text(DC_INLINE_PRE + "两数之和。" + DC_INLINE_POST).split() == ["两数之和。"]
    assert detection_text("### Question:\n" + ZH_DOUBLE + LCB_BLOCK).strip() == ZH_DOUBLE
    assert detection_text(RUSSIAN + "\n" + "\n".join(block), dict.fromkeys(block, 9)).strip() == RUSSIAN
    # a row made only of template lines (its statement is repeated too): its rarest lines are the statement
    assert detection_text(RUSSIAN + "\n" + "\n".join(block), {RUSSIAN: 3, **dict.fromkeys(block, 9)}).strip() == RUSSIAN
    # nothing left after stripping: the whole statement is read
    only = "\n".join(block)
    assert detection_text(only, dict.fromkeys(block, 3)) == only
    assert detection_text(DC_PRE + DC_POST) == DC_PRE + DC_POST


def test_template_line_share_boundary_is_inclusive():
    stmts = [f"Statement {i}.\nShared line." for i in range(3)] + [f"other {i}" for i in range(147)]
    assert len(stmts) == 150 and 3 / 150 == 0.02
    assert template_lines(stmts) == {"Shared line.": 3}   # >= 2%: inclusive


# ---------------------------------------------------------------- 2, 3, 4: positional keys, vacuous suites, parity

EN_VARIANTS = [EN_DOUBLE.replace("twice", word) for word in ("twice", "double", "two times")]
VACUOUS_GT = {"inputs": ["1\n", "2\n"], "outputs": ["", ""]}       # every expected output empty
PRINTS_NOTHING, PRINTS_X = md("pass"), md("print('x')")
TWELVE_GT = {"inputs": [f"{n}\n" for n in range(1, 13)], "outputs": [f"{2 * n}\n" for n in range(1, 13)]}
FIRST_TEN = md("n = int(input())\nprint(2 * n if n <= 10 else 0)")  # fails only cases 11 and 12


@pytest.fixture(scope="module")
def misc(tmp_path_factory):
    """Three rows without extra_info.index (keyed by position) sharing one test suite, a vacuous row and a row of
    12 cases, scored for real: weak, strong, and strong again with --parity prime_code."""
    root = tmp_path_factory.mktemp("misc")
    rows = [double_row("code_taco", None, s) for s in EN_VARIANTS]      # positions 0, 1, 2: keyed code_taco:#i
    rows.append(double_row("code_taco", "vac", EN_DOUBLE, gt=VACUOUS_GT))
    rows.append(double_row("code_taco", "twelve", EN_DOUBLE, gt=TWELVE_GT))
    dataset = write_jsonl(root / "rows.jsonl", rows)
    # right answers per position: weak / strong
    weak_right, strong_right = [8, 1, 0], [8, 4, 1]
    weak = [{"row": i, "responses": double_responses(weak_right[i])} for i in range(3)]
    weak.append({"key": "code_taco:vac", "responses": [PRINTS_NOTHING] * 2 + [PRINTS_X] * 6})
    weak.append({"key": "code_taco:twelve", "responses": [FIRST_TEN] * 8})
    strong = [{"row": i, "responses": double_responses(strong_right[i])} for i in range(3)]
    strong.append({"key": "code_taco:vac", "responses": [PRINTS_NOTHING] * 8})
    strong.append({"key": "code_taco:twelve", "responses": [DOUBLE_RIGHT, FIRST_TEN, FIRST_TEN] + [DOUBLE_WRONG] * 5})
    return (root, dataset, rows, score_folder(dataset, weak, root / "score-weak"),
            score_folder(dataset, strong, root / "score-strong"),
            score_folder(dataset, strong, root / "score-parity", "--parity", "prime_code"),
            weak_right, strong_right)


def test_rows_keyed_by_position_join_only_the_scored_file(misc, tmp_path):
    root, dataset, rows, weak, strong, _, weak_right, strong_right = misc
    out = tmp_path / "kept.jsonl"
    result = curate(dataset, weak, strong, out)
    assert result.exit_code == 0, result.output
    d = decisions_of(out)
    for i in range(3):
        assert d[f"code_taco:#{i}"]["keyed_by_position"] is True
        assert (d[f"code_taco:#{i}"]["lower_pass_rate"], d[f"code_taco:#{i}"]["upper_pass_rate"]) == \
            (weak_right[i] / 8, strong_right[i] / 8)
    assert [d[f"code_taco:#{i}"]["decision"] for i in range(3)] == ["ceiling", "kept", "kept"]
    report = report_of(out)
    assert report["join"]["by_position"] == 3 and report["join"]["by_data_source_index"] == 2
    assert report["inputs"]["weak"]["scored_this_dataset"] is True
    assert not any("data_source:index" in w for w in report["warnings"])

    # the same rows reordered: same tests everywhere (the ground-truth check cannot tell), other positions
    shuffled = write_jsonl(tmp_path / "reordered.jsonl", [rows[2], rows[0], rows[1], *rows[3:]])
    out2 = tmp_path / "kept2.jsonl"
    result = curate(shuffled, weak, strong, out2)
    assert result.exit_code == 1, result.output
    d = decisions_of(out2)
    assert [d[f"code_taco:#{i}"]["decision"] for i in range(3)] == ["missing_annotation"] * 3
    assert all("lower_pass_rate" not in d[f"code_taco:#{i}"] for i in range(3))
    assert [r["extra_info"].get("index") for r in read_jsonl(out2)] == ["twelve"]   # rows with an index still join
    report = report_of(out2)
    reasons = {(p["row_key"], p["side"]): p["reason"] for p in report["annotation_problems"]}
    assert reasons == {(f"code_taco:#{i}", side): "positional_key" for i in range(3) for side in ("lower", "upper")}
    assert report["join"] == {**report["join"], "by_position": 0, "by_position_refused": 3, "by_data_source_index": 2}
    warning = next(w for w in report["warnings"] if "another dataset file" in w)
    assert "3 row(s) without an extra_info.index are keyed by position" in warning and "positional_key" in warning
    assert "positional_key" in flat(result.output)


def test_vacuous_suites_are_dropped_unless_kept_on_request(misc, tmp_path):
    root, dataset, rows, weak, strong, *_ = misc
    # the score folder flags it (every expected output empty) ...
    problems = {p["row_key"]: p for p in read_jsonl(weak / "problems.jsonl")}
    assert problems["code_taco:vac"]["vacuous"] is True and problems["code_taco:vac"]["c"] == 2
    out = tmp_path / "kept.jsonl"
    result = curate(dataset, weak, strong, out)
    assert result.exit_code == 0, result.output
    d = decisions_of(out)["code_taco:vac"]
    assert d["decision"] == "vacuous" and d["vacuous"] is True
    assert (d["lower_pass_rate"], d["upper_pass_rate"]) == (2 / 8, 1.0)   # goldilocks, were it not vacuous
    o = report_of(out)["overall"]
    assert (o["vacuous"], o["dropped_vacuous"], o["kept"]) == (1, 1, 3)
    assert o["goldilocks"] == o["candidates"] - o["missing_annotation"] - o["dropped_vacuous"] - o["dropped_floor"] \
        - o["dropped_ceiling"] + o["dropped_floor_and_ceiling"]
    assert "code_taco:vac" not in {f"code_taco:{r['extra_info'].get('index')}" for r in read_jsonl(out)}
    assert "vacuous" in flat(result.output)

    kept = tmp_path / "keep.jsonl"
    result = curate(dataset, weak, strong, kept, "--keep-vacuous")
    assert result.exit_code == 0, result.output
    d = decisions_of(kept)["code_taco:vac"]
    assert d["decision"] == "kept" and d["vacuous"] is True
    report = report_of(kept)
    assert report["options"]["keep_vacuous"] is True
    assert report["vacuous_rows"] == [{"row_key": "code_taco:vac", "data_source": "code_taco", "position": 3,
                                       "decision": "kept"}]
    assert (report["overall"]["vacuous"], report["overall"]["dropped_vacuous"], report["overall"]["kept"]) == (1, 0, 4)
    assert any("vacuous" in w and "--keep-vacuous" in w for w in report["warnings"])
    assert [r["extra_info"].get("index") for r in read_jsonl(kept)] == [None, None, "vac", "twelve"]


def test_parity_folders_are_refused_unless_allowed(misc, tmp_path):
    root, dataset, rows, weak, strong, parity, *_ = misc
    verdicts = {v["key"]: v for v in read_jsonl(parity / "verdicts.jsonl")}
    # real prime_code parity: passing the first 10 of 12 cases scores 1.0, verdict SKIPPED
    assert verdicts["code_taco:twelve#1"]["verdict"] == "SKIPPED" and verdicts["code_taco:twelve#1"]["score"] == 1.0
    out = tmp_path / "kept.jsonl"
    result = curate(dataset, weak, parity, out)
    text = flat(result.output)
    assert result.exit_code == 2, result.output
    assert "--strong" in text and str(parity) in text and "--parity prime_code" in text and "--allow-parity" in text
    assert not out.exists() and not list(tmp_path.iterdir())

    result = curate(dataset, weak, parity, out, "--allow-parity")
    assert result.exit_code == 0, result.output
    report = report_of(out)
    assert report["options"]["allow_parity"] is True and report["inputs"]["strong"]["parity"] == "prime_code"
    assert report["inputs"]["weak"]["parity"] is None
    assert any("--parity prime_code" in w for w in report["warnings"])
    # as `arbiter score` counts them: the right program and the two SKIPPED ones pass
    assert decisions_of(out)["code_taco:twelve"]["upper_pass_rate"] == 3 / 8
    normal = tmp_path / "normal.jsonl"
    assert curate(dataset, weak, strong, normal).exit_code == 0
    assert decisions_of(normal)["code_taco:twelve"]["upper_pass_rate"] == 1 / 8


# ---------------------------------------------------------------- 5: no output overwrites an input


def test_outputs_never_overwrite_inputs_or_each_other(scored, tmp_path):
    root, dataset, weak, strong = scored
    d = tmp_path / "rows.jsonl"   # a JSONL copy: --out may then name it
    write_jsonl(d, [verl_row(n) for n in PROBLEMS])
    pq_copy = tmp_path / "rows.parquet"
    pq_copy.write_bytes(dataset.read_bytes())
    link = tmp_path / "link.jsonl"
    link.symlink_to(d)
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "dataset_info.json").write_text("{}")

    def snapshot() -> dict:
        return {str(p): p.read_bytes() for top in (tmp_path, weak, strong) for p in sorted(top.rglob("*"))
                if p.is_file() and not p.is_symlink()}

    before = snapshot()
    base = ["curate", "goldilocks", "--weak", str(weak), "--strong", str(strong), "--quiet"]
    kept = tmp_path / "kept.jsonl"
    cases = [
        (["--dataset", str(d), "--out", str(d)], ["--out", "is --dataset"]),
        (["--dataset", str(pq_copy), "--out", str(pq_copy)], ["--out", "is --dataset"]),
        (["--dataset", str(d), "--out", str(link)], ["--out", "is --dataset"]),                     # a symlink to it
        (["--dataset", str(d), "--out", str(tmp_path / "sub" / ".." / "rows.jsonl")], ["is --dataset"]),
        (["--dataset", str(d), "--out", str(kept), "--report", str(d)], ["--report", "is --dataset"]),
        (["--dataset", str(d), "--out", str(kept), "--report", str(kept)], ["--out and --report are the same file"]),
        (["--dataset", str(d), "--out", str(kept), "--report", str(tmp_path / "kept.rows.jsonl")],
         ["--report and rows log are the same file"]),
        (["--dataset", str(d), "--out", str(kept), "--report", str(weak / "summary.json")], ["--report", "inside --weak"]),
        (["--dataset", str(d), "--out", str(kept), "--report", str(strong / "new.json")], ["inside --strong"]),
        (["--dataset", str(d), "--out", str(strong / "kept.jsonl")], ["--out", "inside --strong"]),
        (["--dataset", str(hf), "--out", str(hf / "kept.jsonl")], ["--out", "inside --dataset"]),
    ]
    (tmp_path / "sub").mkdir()
    for args, needles in cases:
        result = runner.invoke(app, base + args, env=WIDE)
        text = flat(result.output)
        assert result.exit_code == 2, (args, result.output)
        for needle in needles:
            assert needle in text, (needle, result.output)
        assert snapshot() == before, args
        assert not kept.exists() and not list(tmp_path.glob("*.partial"))
    # audit --report X --dataset X
    for target in (d, link, pq_copy):
        result = runner.invoke(app, ["curate", "audit", "--dataset", str(d if target is not pq_copy else pq_copy),
                                     "--report", str(target)], env=WIDE)
        assert result.exit_code == 2 and "--report" in flat(result.output) and "is --dataset" in flat(result.output)
        assert snapshot() == before
    # the same outputs elsewhere are fine
    assert runner.invoke(app, base + ["--dataset", str(d), "--out", str(kept)]).exit_code == 1
    assert kept.exists() and d.read_bytes() == before[str(d)]


# ---------------------------------------------------------------- 8: swapped folders, scores that are not rewards


def test_swapped_folders_warn(misc, tmp_path):
    root, dataset, rows, weak, strong, *_ = misc
    out = tmp_path / "kept.jsonl"
    result = curate(dataset, weak, strong, out)
    assert result.exit_code == 0 and not any("swapped" in w for w in report_of(out)["warnings"])
    # --weak and --strong given the other way round: a warning, not a failure
    swapped = tmp_path / "swapped.jsonl"
    result = curate(dataset, strong, weak, swapped)
    assert result.exit_code == 0, result.output
    annotated = [d for d in decisions_of(swapped).values() if "lower_pass_rate" in d]
    mean_lower = sum(d["lower_pass_rate"] for d in annotated) / len(annotated)
    mean_upper = sum(d["upper_pass_rate"] for d in annotated) / len(annotated)
    assert mean_lower > mean_upper
    warning = next(w for w in report_of(swapped)["warnings"] if "swapped" in w)
    assert f"({mean_lower:.3f})" in warning and f"({mean_upper:.3f})" in warning and "swapped" in flat(result.output)


def test_scores_that_are_not_rewards_are_annotation_problems(scored, tmp_path):
    root, dataset, weak, strong = scored

    # a copy of the strong folder whose verdict records carry a NaN score and a score of 1.5
    edited = tmp_path / "strong-edited"
    edited.mkdir()
    for f in strong.iterdir():
        (edited / f.name).write_bytes(f.read_bytes())
    lines = (edited / "verdicts.jsonl").read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    for rec in recs:
        if rec["key"] == f"{key('sum')}#0":
            rec["score"] = float("nan")
        if rec["key"] == f"{key('max')}#3":
            rec["score"] = 1.5
    (edited / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert "NaN" in (edited / "verdicts.jsonl").read_text()
    out = tmp_path / "bad.jsonl"
    result = curate(dataset, weak, edited, out)
    assert result.exit_code == 1, result.output
    reasons = {(p["row_key"], p["side"]): (p["reason"], p["detail"]) for p in report_of(out)["annotation_problems"]}
    assert reasons[(key("sum"), "upper")][0] == "bad_score" and "nan" in reasons[(key("sum"), "upper")][1]
    assert reasons[(key("max"), "upper")][0] == "bad_score" and "1.5" in reasons[(key("max"), "upper")][1]
    d = decisions_of(out)
    assert d[key("sum")]["decision"] == d[key("max")]["decision"] == "missing_annotation"
    assert read_jsonl(out) == []    # sum and max were the only kept rows; neither is a fail either
    # the folder's other rows still have the usual completion count
    assert report_of(out)["options"]["k_upper"] == K


# ---------------------------------------------------------------- 6 + 8: lone surrogates, mixed indexes, Parquet

LONE = "\ud83d"   # half of a surrogate pair, as JSON "\ud83d" decodes it


@pytest.fixture(scope="module")
def jsonl_rows(tmp_path_factory):
    """A JSONL dataset (written with \\u escapes) whose first statement holds a lone surrogate, whose indexes mix
    integers and strings, and whose third row carries an integer Parquet cannot hold; all goldilocks (weak 1/8,
    strong 4/8), scored for real."""
    root = tmp_path_factory.mktemp("jsonl_rows")
    rows = [double_row("code_taco", 0, EN_VARIANTS[0].replace("single integer", f"single {LONE} integer"), id="a"),
            double_row("code_taco", "t1", EN_VARIANTS[1], id="b"),
            double_row("code_taco", 2, EN_VARIANTS[2], id="c", big=10 ** 30)]
    dataset = root / "rows.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="ascii")
    assert "\\ud83d" in dataset.read_text()
    folders = [score_folder(dataset, [{"data_source": "code_taco", "index": r["extra_info"]["index"],
                                       "responses": double_responses(right)} for r in rows], root / f"score-{name}")
               for name, right in (("weak", 1), ("strong", 4))]
    return root, dataset, rows, folders[0], folders[1]


def test_lone_surrogates_mixed_indexes_and_unwritable_rows(jsonl_rows, tmp_path):
    root, dataset, rows, weak, strong = jsonl_rows
    # JSONL out: every row kept as read, the lone surrogate too (as a \\u escape: the file is valid UTF-8)
    out = tmp_path / "kept.jsonl"
    result = curate(dataset, weak, strong, out)
    assert result.exit_code == 0, result.output
    out.read_bytes().decode("utf-8")
    kept = read_jsonl(out)
    assert [r["prompt"] for r in kept] == [r["prompt"] for r in rows] and LONE in kept[0]["prompt"][0]["content"]
    assert [r["extra_info"]["index"] for r in kept] == [0, "t1", 2] and kept[2]["extra_info"]["big"] == 10 ** 30
    assert decisions_of(out)["code_taco:0"]["english_confidence"] >= ENGLISH_MIN
    audit_report = tmp_path / "audit.json"   # the audit reads and reports it too
    result = runner.invoke(app, ["curate", "audit", "--dataset", str(out), "--report", str(audit_report)], env=WIDE)
    assert result.exit_code == 0, result.output
    assert json.loads(audit_report.read_text())["clean"] == 3

    # Parquet out: indexes written as strings (they mix types), the surrogate replaced by U+FFFD and listed, the
    # row whose integer does not fit int64 a bad row naming itself; the others are written
    pout = tmp_path / "kept.parquet"
    result = curate(dataset, weak, strong, pout)
    assert result.exit_code == 1, result.output
    table = pq.read_table(pout).to_pylist()
    assert [r["extra_info"]["index"] for r in table] == ["0", "t1"]
    assert table[0]["prompt"][0]["content"] == rows[0]["prompt"][0]["content"].replace(LONE, "\ufffd")
    assert table[0]["extra_info"]["lower_pass_rate"] == 1 / 8 and table[1]["extra_info"]["upper_pass_rate"] == 4 / 8
    d = decisions_of(pout)
    assert d["code_taco:0"]["decision"] == "kept" and d["code_taco:0"]["surrogates_replaced"] == ["prompt[0].content"]
    assert d["code_taco:2"]["decision"] == "bad_row" and "code_taco:2" in d["code_taco:2"]["error"]
    report = report_of(pout)
    assert [b["row_key"] for b in report["bad_rows"]] == ["code_taco:2"]
    assert "cannot be written to kept.parquet" in report["bad_rows"][0]["error"]
    assert report["options"]["index_as_string"] is True
    assert any("written as strings" in w for w in report["warnings"])
    assert any("U+FFFD" in w for w in report["warnings"])
    assert (report["overall"]["candidates"], report["overall"]["kept"], report["overall"]["bad_rows"]) == (2, 2, 1)
    assert "bad row" in flat(result.output)

    # rows that cannot share one Parquet schema (extra_info.id a string here, a number there): refused before
    # anything is written
    mixed = tmp_path / "mixed.jsonl"
    other = [dict(r, extra_info={**r["extra_info"], "id": 5 if i == 1 else r["extra_info"]["id"]})
             for i, r in enumerate(rows)]
    mixed.write_text("".join(json.dumps(r) + "\n" for r in other), encoding="ascii")
    mout = tmp_path / "mixed-kept.parquet"
    result = curate(mixed, weak, strong, mout)
    assert result.exit_code == 2, result.output
    assert "cannot share one Parquet schema" in flat(result.output) and "write .jsonl" in flat(result.output)
    assert not list(tmp_path.glob("mixed-kept*"))


def test_writer_refuses_a_surrogate_in_the_tests_and_lingua_reads_surrogates(tmp_path):
    from arbiter.pipelines.goldilocks import CuratedWriter, UnwritableRow, annotated_schema

    row = double_row("code_taco", "x", EN_DOUBLE)
    row["extra_info"].update(lower_pass_rate=0.0, lower_scores=[0.0], upper_pass_rate=1.0, upper_scores=[1.0])
    schema = annotated_schema(pa.Table.from_pylist([row]).schema)
    writer = CuratedWriter(tmp_path / "w.parquet", schema)
    bad = json.loads(json.dumps(row))
    bad["reward_model"]["ground_truth"] = json.dumps({"inputs": ["1\n"], "outputs": [f"{LONE}\n"]}, ensure_ascii=False)
    with pytest.raises(UnwritableRow, match="reward_model.ground_truth"):
        writer.encode(bad)
    fine = json.loads(json.dumps(row))
    fine["prompt"][0]["content"] += LONE
    payload, replaced = writer.encode(fine)
    assert replaced == ["prompt[0].content"]
    writer.write_encoded(payload)
    writer.close()
    assert pq.read_table(tmp_path / "w.parquet").to_pylist()[0]["prompt"][0]["content"].endswith("\ufffd")
    english = EnglishFilter()
    assert english.confidence(EN_DOUBLE + LONE) == english.confidence(EN_DOUBLE + "\ufffd") >= ENGLISH_MIN
    assert english.confidences([RUSSIAN + LONE])[0] < 0.5
