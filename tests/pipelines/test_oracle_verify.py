"""Oracle SFT verification end to end (issue 5) on the shipped demo data, in the real sandbox, with real
compiles and real valgrind counts: every demo row gets the outcome documented in ``data/oracle/README.md`` (and
its machine-readable twin ``data/oracle/expected_outcomes.json``); the card's return example is accepted; bad
input is rejected row by row; generated suites are built in the sandbox and cached.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from arbiter.datasets.oracle import load_seeds
from arbiter.pipelines.oracle.generated_tests import GenPlan, build_generated_suite
from arbiter.pipelines.oracle.verify import VerifyOptions, verify_returns
from arbiter.datasets.io import read_jsonl

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data/oracle"
MANIFEST = json.loads((DATA / "expected_outcomes.json").read_text())
SEEDS = load_seeds(DATA / "seeds.jsonl").by_id


def rows(path: Path) -> list[dict]:
    return list(read_jsonl(path)) if path.exists() else []


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """One run of the demo (what ``make demo`` runs), shared by the tests below."""
    out = tmp_path_factory.mktemp("demo")
    run = verify_returns(DATA / "seeds.jsonl", DATA / "returns.jsonl", out, hidden=DATA / "hidden_tests.json",
                         generators=DATA / "generators")
    by_line = {}
    for r in rows(out / "verified.jsonl"):
        by_line[r["line"]] = ("accepted", r)
    for r in rows(out / "rejected.jsonl"):
        if r["kind"] == "return":
            assert r["line"] not in by_line, f"line {r['line']} written twice"
            by_line[r["line"]] = ("rejected", r)
    return out, run, by_line


def test_every_demo_row_gets_its_documented_outcome(demo):
    out, run, by_line = demo
    assert run.report["counts"]["errors"] == 0
    assert sorted(by_line) == [m["line"] for m in MANIFEST["rows"]] == list(range(1, 32))
    for m in MANIFEST["rows"]:
        outcome, rec = by_line[m["line"]]
        where = f"line {m['line']} ({m['demo_id']})"
        assert rec.get("task_id") == m["task_id"], where
        if rec.get("demo_id") is not None:
            assert rec["demo_id"] == m["demo_id"], where
        assert outcome == ("accepted" if m["accepted"] else "rejected"), (where, rec.get("reasons"))
        if m["accepted"]:
            v = rec["verification"]
            assert v["score"] == 1.0 and v["compile_ok"] and v["speed_gate"] == "passed", where
            assert v["largest_speedup"] >= 1.0 and v["speedup"] > 1.0, where
            continue
        assert rec["stage"] == m["stage"], (where, rec["reasons"])
        codes = {f"{r['stage']}:{r['code']}" for r in rec["reasons"]}
        assert codes == set(m["codes"]), (where, rec["reasons"])
        assert all(r["message"] for r in rec["reasons"]), where
        for code, path in (m.get("paths") or {}).items():
            assert any(f"{r['stage']}:{r['code']}" == code and r.get("path") == path for r in rec["reasons"]), \
                (where, code, path, rec["reasons"])
        if m["stage"] != "load":
            assert rec["verification"]["score"] == 0.0, where
            claim_false = bool(rec["verification"]["claim_disagreements"])
            assert claim_false == m["claim_false"], (where, rec["verification"]["claim_disagreements"])
            assert rec["row"]["demo_id"] == m["demo_id"] and rec["claimed_verification"] == rec["row"]["verification"]
        for suite, want in (m.get("suites") or {}).items():
            v = rec["verification"]
            assert v[f"all_{suite}_tests_pass"] is want["pass"], (where, suite, v["tests"])
            if "failed" in want:
                listed = [c for r in rec["reasons"] if r.get("suite") == suite for c in r.get("cases", [])]
                assert listed == want["failed"], (where, suite, rec["reasons"])
    # accepted rows with a false claim say so
    good4 = by_line[6][1]["verification"]
    fields = {d["field"] for d in good4["claim_disagreements"]}
    assert {"all_visible_tests_pass", "score"} <= fields and "claim disagrees" in good4["notes"]


def test_readme_table_and_manifest_agree():
    """The README's human table and expected_outcomes.json describe the same outcome for every line."""
    text = (DATA / "README.md").read_text()
    table = [l for l in text.splitlines() if re.match(r"^\| *\d+ \| `", l)]
    assert len(table) == len(MANIFEST["rows"]) == 31
    for line, m in zip(table, MANIFEST["rows"]):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert int(cells[0]) == m["line"] and cells[1] == f"`{m['demo_id']}`"
        outcome = cells[3]
        assert ("**accepted**" in outcome) == m["accepted"], line
        for code in m["codes"]:
            stage, name = code.split(":")
            token = {"compile:CE": "CE", "tests:WA": "WA", "speed:SLOWER_THAN_SOURCE": "slower than the source"}.get(
                code, name)
            assert token in outcome, (line, code)


def test_outputs_sft_verified_best_report(demo):
    out, run, by_line = demo
    accepted = [r for _, (o, r) in sorted(by_line.items()) if o == "accepted"]
    sft = rows(out / "sft.jsonl")
    assert len(sft) == len(accepted) == 7 and all(set(r) == {"task_id", "messages"} for r in sft)
    for rec in accepted:
        seed = SEEDS[rec["task_id"]]
        s = next(x for x in sft if x["messages"] == [{"role": m["role"], "content": m["content"]}
                                                     for m in rec["messages"]])
        assert s["messages"][:-1] == [{"role": m.role, "content": m.content} for m in seed.messages]
        assert s["messages"][-1]["role"] == "assistant"
        v = rec["verification"]
        for f in ("compile_ok", "all_visible_tests_pass", "all_hidden_tests_pass", "score", "runtime_ms", "speedup",
                  "cycles", "instructions", "toolchain", "notes"):
            assert f in v, f
        assert v["all_visible_tests_pass"] and v["all_hidden_tests_pass"] and v["all_generated_tests_pass"]
        assert v["toolchain"]["fingerprint"] == v["measurement"]["fingerprint"]
        assert v["toolchain"]["flags"] == ["-std=c++20", "-O2", "-pipe"]  # the seed's command, as is
        cyc = v["cycles"]  # the default measure; its figures under its unit's name
        assert v["instructions"] is None
        assert cyc["source"] > cyc["answer"] > 0 and v["speedup"] == pytest.approx(cyc["source"] / cyc["answer"],
                                                                                   rel=1e-5)
        assert v["measurement"]["method"] == "cycles" and len(v["measurement"]["cases"]) == 3
        assert v["measurement"]["meter"]["cycle_model"]["name"] == "gem5-skylake-se"
        assert sorted(v["measurement"]["largest_cases"]) == ["gen_s3_0", "gen_s3_1"]
        assert rec["claimed_verification"] == json.loads(
            (DATA / "returns.jsonl").read_text().splitlines()[rec["line"] - 1])["verification"]
    best = rows(out / "best.jsonl")
    assert sorted(b["task_id"] for b in best) == sorted(SEEDS)
    speed = {r["demo_id"]: r["verification"]["largest_speedup"] for r in accepted}
    faster = max(MANIFEST["best"]["dummy_pie_cpp_0003_count_pairs"]["faster_of"], key=speed.get)
    b3 = next(b for b in best if b["task_id"] == "dummy_pie_cpp_0003_count_pairs")
    assert b3["messages"] == next(r for r in accepted if r["demo_id"] == faster)["messages"]
    rep = json.loads((out / "report.json").read_text())
    measured = [r for r in rows(out / "verified.jsonl") + rows(out / "rejected.jsonl")
                if (r.get("verification") or {}).get("measurement")]
    assert len(measured) > len(accepted)  # some rejected rows were measured too (slower than the source)
    assert rep["counts"] == {"rows": 31, "accepted": 7, "rejected": 24, "errors": 0, "sft_rows": 7,
                             "other_rejections": 0, "accepted_visible_only": 0,
                             "accepted_speed_gate_not_applied": 0, "measure_fallbacks": 0,
                             "speedup_units": {"cycles": len(measured)}, "tasks_best_across_units": 0}
    assert all(r["unit"] == "cycles" for r in rep["rows"] if r["outcome"] == "accepted")
    # every task has hidden and generated tests, the demo's hidden tests all agree with the seeds' sources
    assert rep["warnings"] == [] and rep["coverage"]["tasks_visible_only"] == []
    assert all(h["total"] == h["kept"] and not h["dropped"] for h in rep["hidden_checks"].values())
    assert sorted(rep["hidden_checks"]) == sorted(SEEDS)
    rejected = [json.loads(line) for line in (out / "rejected.jsonl").read_text().splitlines()]
    wa_rows = [r for r in rejected if any(x["code"] == "WA" for x in r["reasons"])]
    # rows, not reasons: the 3 WA rows hold 7 WA reasons (one per failing suite), which the count used to be
    assert sum(rep["by_stage"].values()) == 24 and rep["by_reason"]["tests:WA"] == len(wa_rows) == 3
    assert sum(len([x for x in r["reasons"] if x["code"] == "WA"]) for r in wa_rows) == 7
    assert rep["tasks"]["dummy_pie_cpp_0003_count_pairs"]["best"]["demo_id"] == faster
    gen = rep["generated"]["dummy_pie_cpp_0001_sum_even"]
    assert gen["kept"] + gen["duplicate_input"] + gen["generator_failed"] + gen["source_failed"] == 26


def test_return_example_is_accepted(tmp_path):
    ex = MANIFEST["return_example"]
    run = verify_returns(DATA / "seeds.jsonl", DATA / ex["file"], tmp_path, hidden=DATA / "hidden_tests.json",
                         generators=DATA / "generators")
    assert run.report["counts"]["accepted"] == 1 and run.report["counts"]["rows"] == 1
    (rec,) = rows(tmp_path / "verified.jsonl")
    assert rec["task_id"] == ex["task_id"] and rec["verification"]["score"] == 1.0
    assert rec["claimed_verification"]["all_hidden_tests_pass"] is None  # the claim is kept as it was
    assert rec["verification"]["all_hidden_tests_pass"] is True
    assert rows(tmp_path / "sft.jsonl") == [{"task_id": rec["task_id"], "messages": rec["messages"]}]


def test_parquet_inputs(tmp_path):
    """Seed and return rows may come as Parquet (issue 5, "Inputs")."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name, src in (("seeds", "seeds.jsonl"), ("returns", "return_example.jsonl")):
        pq.write_table(pa.Table.from_pylist(rows(DATA / src)), tmp_path / f"{name}.parquet")
    run = verify_returns(tmp_path / "seeds.parquet", tmp_path / "returns.parquet", tmp_path / "out",
                         hidden=DATA / "hidden_tests.json")
    assert run.report["counts"]["accepted"] == 1 and run.report["counts"]["rows"] == 1
    (rec,) = rows(tmp_path / "out" / "verified.jsonl")
    assert rec["verification"]["all_hidden_tests_pass"] is True and rec["line"] == 1


# --------------------------------------------------------------------------------------------------
# bad input


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_bad_input_each_row_rejected_with_its_reason_batch_unaffected(tmp_path):
    example = _lines(DATA / "return_example.jsonl")[0]
    good2 = next(l for l in _lines(DATA / "returns.jsonl") if '"demo_id": "good-0002"' in l)
    row = json.loads(example)
    unknown = dict(row, task_id="dummy_pie_cpp_0777_nope")
    missing = {k: v for k, v in row.items() if k != "messages"}
    bad_role = json.loads(example)
    bad_role["messages"][0]["role"] = "robot"
    huge = json.loads(example)
    huge["messages"][-1]["content"] = huge["messages"][-1]["content"].replace(
        "</reasoning>", "x" * (10 * 1024 * 1024) + "</reasoning>")
    returns = tmp_path / "returns.jsonl"
    with returns.open("wb") as f:
        f.write((example + "\n").encode())                                   # 1 good
        f.write(b'{"task_id": "dummy_pie_cpp_0001_sum_even", "messages": [\n')  # 2 malformed JSON
        f.write((json.dumps(unknown) + "\n").encode())                       # 3 unknown task id
        f.write((example + "\n").encode())                                   # 4 duplicate of line 1
        f.write((json.dumps(missing) + "\n").encode())                       # 5 missing field
        f.write((json.dumps(bad_role) + "\n").encode())                      # 6 schema violation
        f.write((json.dumps(huge) + "\n").encode())                          # 7 a 10 MB answer
        f.write(b"\x00\xff\xfe binary \x89PNG\r\n")                          # 8 binary junk
        f.write((good2 + "\n").encode())                                     # 9 good (another task)
    seeds = tmp_path / "seeds.jsonl"
    seed_lines = _lines(DATA / "seeds.jsonl")
    seeds.write_text("\n".join(seed_lines + [seed_lines[0], '{"task_id": "broken"}']) + "\n")  # dup + bad seed
    hidden = {"dummy_pie_cpp_0002_prefix_queries": json.loads((DATA / "hidden_tests.json").read_text())[
        "dummy_pie_cpp_0002_prefix_queries"]}
    hidden["dummy_pie_cpp_0002_prefix_queries"][0].pop("stdout")  # a broken hidden entry: task 0002 unusable
    hidden_path = tmp_path / "hidden.json"
    hidden_path.write_text(json.dumps(hidden))

    out = tmp_path / "out"
    run = verify_returns(seeds, returns, out, hidden=hidden_path,
                         options=VerifyOptions(measure_cases=1))
    rej = {(r["kind"], r["line"]): r for r in rows(out / "rejected.jsonl")}
    codes = {k: [x["code"] for x in r["reasons"]] for k, r in rej.items()}
    assert codes[("return", 2)] == ["MALFORMED_JSON"]
    assert codes[("return", 3)] == ["UNKNOWN_TASK_ID"]
    assert codes[("return", 4)] == ["DUPLICATE_ROW"] and "line 1" in rej[("return", 4)]["reasons"][0]["message"]
    assert codes[("return", 5)] == ["SCHEMA"] and "messages" in rej[("return", 5)]["reasons"][0]["message"]
    assert codes[("return", 6)] == ["SCHEMA"] and rej[("return", 6)]["reasons"][0]["path"] == "$.messages[0].role"
    assert codes[("return", 7)] == ["ANSWER_TOO_LARGE"]
    assert codes[("return", 8)] == ["NOT_UTF8"]
    assert codes[("seed", 6)] == ["DUPLICATE_TASK_ID"] and codes[("seed", 7)][0] == "SCHEMA"
    assert codes[("hidden", None)] == ["SCHEMA"]
    # line 9 belongs to the task whose hidden tests are broken: INVALID_TASK, not a verdict on the answer
    assert rej[("return", 9)]["stage"] == "task" and codes[("return", 9)] == ["INVALID_TASK"]
    # the good row is unaffected; it is verified on its visible test only (no hidden tests for its task, no
    # generators): that test is tiny, so the speed gate is not applied and the row says so
    (acc,) = rows(out / "verified.jsonl")
    assert acc["line"] == 1 and acc["verification"]["score"] == 1.0
    assert acc["verification"]["all_hidden_tests_pass"] is None
    assert acc["verification"]["speed_gate"] == "not_applied" and "speed gate not applied" in acc["verification"]["notes"]
    # under the default measure the exemption compares with the start-up floor in cycles
    m = acc["verification"]["measurement"]
    assert m["unit"] == "cycles" and m["startup_floor"] > 0 and "cycles on" in acc["verification"]["notes"]
    assert run.report["counts"]["accepted"] == 1 and run.report["counts"]["rejected"] == 8
    assert run.report["counts"]["other_rejections"] == 3
    assert len(rows(out / "sft.jsonl")) == 1
    assert all(r["row"] is None for r in rej.values() if r["stage"] == "load")  # junk is not copied


# --------------------------------------------------------------------------------------------------
# generated suites


GEN_WITH_FAILURES = r'''
import sys
seed, size = int(sys.argv[1]), int(sys.argv[2])
if seed == 2:
    sys.exit(3)                      # generator failure
if seed == 1:
    n = 200000                       # the O(n^2) source cannot finish in 2 s: dropped
    print(n); print(" ".join(["2"] * n))
else:                                # seeds 0 and 3 print the same input: one is a duplicate
    print(3); print("1 2 4")
'''


def test_generated_suite_runs_in_sandbox_drops_and_caches(tmp_path):
    seed = SEEDS["dummy_pie_cpp_0001_sum_even"]
    gen = tmp_path / "gen.py"
    gen.write_text(GEN_WITH_FAILURES)
    cache = tmp_path / "cache"
    s1 = build_generated_suite(seed, gen, "1:4", cache_dir=cache)
    assert not s1.cached
    assert [c.name for c in s1.cases] == ["gen_s1_0"] and s1.cases[0].stdout == b"6\n"
    reasons = {d["name"]: d["reason"] for d in s1.dropped}
    assert reasons == {"gen_s1_1": "source_failed", "gen_s1_2": "generator_failed", "gen_s1_3": "duplicate_input"}
    assert "time_limit" in next(d["detail"] for d in s1.dropped if d["name"] == "gen_s1_1")
    assert s1.counts() == {"kept": 1, "generator_failed": 1, "duplicate_input": 1, "source_failed": 1}
    s2 = build_generated_suite(seed, gen, "1:4", cache_dir=cache)
    assert s2.cached and s2.key == s1.key and s2.dropped == s1.dropped
    assert [(c.name, c.stdin, c.stdout) for c in s2.cases] == [(c.name, c.stdin, c.stdout) for c in s1.cases]
    # another generator or another plan is another suite
    gen.write_text(GEN_WITH_FAILURES + "\n# changed\n")
    assert not build_generated_suite(seed, gen, "1:1", cache_dir=cache).cached


def test_generator_cannot_touch_the_host(tmp_path):
    """The generator runs in the sandbox: it cannot read the repository or write outside its scratch space."""
    seed = SEEDS["dummy_pie_cpp_0001_sum_even"]
    gen = tmp_path / "gen.py"
    marker = tmp_path / "escaped"
    gen.write_text(f"import os\nok = os.path.exists({str(REPO / 'pyproject.toml')!r})\n"
                   f"try:\n    open({str(marker)!r}, 'w').write('x')\nexcept OSError:\n    pass\n"
                   "print(1); print(8 if ok else 2)\n")
    s = build_generated_suite(seed, gen, "0:1", cache_dir=tmp_path / "c")
    assert s.cases[0].stdin == b"1\n2\n" and not marker.exists()


def test_gen_plan_text_form():
    p = GenPlan.parse("0:10,1:10,2:4,3:2")
    assert len(p.pairs()) == 26 and p.pairs()[-1] == (3, 1) and str(p) == "0:10,1:10,2:4,3:2"
    assert GenPlan.parse("3:7+9").pairs() == [(3, 7), (3, 9)]
    for bad in ("", "x", "1:0", "1:2,1:3", "1:-1", "2:3+3"):
        with pytest.raises(ValueError):
            GenPlan.parse(bad)


def test_bad_options_are_errors(tmp_path):
    for kw in ({"measure": "nope"}, {"min_speedup": 0}, {"measure_cases": 0}, {"largest_fraction": 1.5},
               {"gen_plan": "nope"}):
        with pytest.raises(ValueError):
            verify_returns(DATA / "seeds.jsonl", DATA / "return_example.jsonl", tmp_path,
                           options=VerifyOptions(**kw))
    with pytest.raises(FileNotFoundError):
        verify_returns(DATA / "seeds.jsonl", tmp_path / "missing.jsonl", tmp_path)


# --------------------------------------------------------------------------------------------------
# what a reader sees is what g++ compiles (Trojan Source and line-break disagreements)


def _good_0002() -> dict:
    return json.loads(next(l for l in _lines(DATA / "returns.jsonl") if '"demo_id": "good-0002"' in l))


#: Four edits of the shipped answer good-0002, each showing a reader a line g++ does not compile (or another
#: variable than the one g++ uses), each passing every test when compiled: the reason that refuses it.
HIDDEN_LINE = {
    "SPLICED_LINE_COMMENT": ("    cout << out;", "    // the buffered answer \\\n    out.clear();\n    cout << out;"),
    "CONFUSABLE_IDENTIFIER": ("    string out;\n", "    string out;\n    string \u043eut;\n    \u043eut += \"debug\\n\";\n"),
    "UNICODE_LINE_SEPARATOR": ("    cout << out;", "    // the buffered answer\u2028    out.clear();\n    cout << out;"),
    "NEL_CHARACTER": ("    cout << out;", "    // the buffered answer\x85    out.clear();\n    cout << out;"),
}


def test_answers_whose_reader_sees_another_program_than_gcc_are_refused(tmp_path):
    """Each edit compiles and passes the task's tests (g++ never compiles the line a reader sees), so before it
    was accepted into sft.jsonl; now each is rejected at the format stage with its own reason, and the
    unedited answer beside them is still accepted."""
    from arbiter.judge.build import build_cpp

    good = _good_0002()
    answer = good["messages"][-1]["content"]
    rows_out = [good]
    for code, (old, new) in HIDDEN_LINE.items():
        assert old in answer
        row = json.loads(json.dumps(good))
        row["messages"][-1]["content"] = answer.replace(old, new, 1)
        row["demo_id"] = code
        rows_out.append(row)
        program = row["messages"][-1]["content"].split("```cpp\n", 1)[1].rsplit("```", 1)[0]
        assert build_cpp(program).ok, code  # g++ takes every one of them
    returns = tmp_path / "returns.jsonl"
    returns.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows_out), encoding="utf-8")
    out = tmp_path / "out"
    verify_returns(DATA / "seeds.jsonl", returns, out, hidden=DATA / "hidden_tests.json",
                   options=VerifyOptions(measure_cases=1))
    (acc,) = rows(out / "verified.jsonl")
    assert acc["line"] == 1
    rej = {r["line"]: r for r in rows(out / "rejected.jsonl")}
    for line, code in enumerate(HIDDEN_LINE, 2):
        assert rej[line]["stage"] == "format" and [x["code"] for x in rej[line]["reasons"]] == [code], rej[line]
    assert len(rows(out / "sft.jsonl")) == 1
