"""Loading oracle seed rows, return rows and hidden tests: schema validation and bad input."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arbiter.datasets.oracle import (
    MAX_ANSWER_BYTES,
    RejectCode,
    ReturnRow,
    SeedRow,
    iter_returns,
    load_hidden_tests,
    load_returns,
    load_schema,
    load_seeds,
    return_row_key,
)

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data/oracle"


@pytest.fixture(scope="module")
def seed_dicts() -> list[dict]:
    return [json.loads(l) for l in (DATA / "seeds.jsonl").read_text(encoding="utf-8").splitlines() if l.strip()]


@pytest.fixture(scope="module")
def seeds():
    return load_seeds(DATA / "seeds.jsonl").by_id


def write_jsonl(path: Path, rows: list) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def answer_row(seed: dict, content: str, **extra) -> dict:
    row = {
        "task_id": seed["task_id"],
        "messages": copy.deepcopy(seed["messages"]) + [{"role": "assistant", "content": content}],
        "verification": {"compile_ok": True, "all_visible_tests_pass": True, "all_hidden_tests_pass": None,
                         "score": 1.0, "runtime_ms": None, "notes": "claim"},
    }
    row.update(extra)
    return row


# --------------------------------------------------------------------------------------------------
# shipped files


def test_shipped_copies_are_byte_exact(shared):
    assert (DATA / "seeds.jsonl").read_bytes() == (shared / "seed/data/oracle_seed.jsonl").read_bytes()
    assert (DATA / "return_example.jsonl").read_bytes() == (shared / "seed/data/oracle_return_example.jsonl").read_bytes()
    for name in ("oracle_seed.schema.json", "oracle_return.schema.json"):
        assert load_schema(name) == json.loads((shared / "seed/schema" / name).read_text())
        assert (REPO / "src/arbiter/schemas" / name).read_bytes() == (shared / "seed/schema" / name).read_bytes()


def test_seed_rows_load_typed(seeds):
    assert len(seeds) == 5
    s: SeedRow = seeds["dummy_pie_cpp_0005_matrix_row_max"]
    assert s.compile.command == "g++ -std=c++20 -O2 -pipe main.cpp -o main"
    assert s.compile.timeout_sec == 20 and s.run.timeout_sec == 2 and s.run.memory_mb == 512
    assert s.public_checker.type == "exact_stdout" and s.public_checker.strip_trailing_whitespace is True
    assert s.visible_tests[0].stdout == "9 7 -1\n"
    assert s.constraints.assistant_format == "one_reasoning_block_then_one_cpp_fence"
    assert s.metadata["problem_id"] == "dummy_matrix_row_max"
    assert [m.role for m in s.messages] == ["user"]
    assert s.origin.line == 5 and s.origin.source.endswith("seeds.jsonl")


def test_return_example_loads_and_validates(seeds):
    res = load_returns(DATA / "return_example.jsonl", seeds)
    assert res.rejections == []
    (row,) = res.rows
    assert row.verification.score == 1.0 and row.verification.all_hidden_tests_pass is None
    assert row.answer.startswith("<reasoning>")
    assert row.key == return_row_key(row.task_id, row.raw["messages"])


def test_demo_returns_file_rejects_exactly_the_documented_rows(seeds):
    res = load_returns(DATA / "returns.jsonl", seeds)
    got = {(r.line, r.code.value, r.path) for r in res.rejections}
    assert got == {
        (29, "SCHEMA", "$.verification.score"),
        (30, "SCHEMA", "$"),
        (31, "UNKNOWN_TASK_ID", "$.task_id"),
    }
    assert len(res.rows) == 28
    # several samples for one task get distinct stable keys
    keys = [r.key for r in res.rows]
    assert len(keys) == len(set(keys))
    readme = (DATA / "README.md").read_text()
    for line in (DATA / "returns.jsonl").read_text().splitlines():
        assert f"`{json.loads(line)['demo_id']}`" in readme


# --------------------------------------------------------------------------------------------------
# seed validation


@pytest.mark.parametrize(
    "mutate, path",
    [
        (lambda r: r["compile"].__setitem__("timeout_sec", 0), "$.compile.timeout_sec"),
        (lambda r: r["compile"].__setitem__("timeout_sec", "20"), "$.compile.timeout_sec"),
        (lambda r: r["run"].__setitem__("memory_mb", 1.5), "$.run.memory_mb"),
        (lambda r: r.__setitem__("language", "cpp17"), "$.language"),
        (lambda r: r.__setitem__("visible_tests", []), "$.visible_tests"),
        (lambda r: r["visible_tests"][0].pop("stdout"), "$.visible_tests[0]"),
        (lambda r: r["messages"][0].__setitem__("role", "assistant"), "$.messages[0].role"),
        (lambda r: r["public_checker"].__setitem__("type", "tokens"), "$.public_checker.type"),
        (lambda r: r["constraints"].__setitem__("assistant_format", "free"), "$.constraints.assistant_format"),
        (lambda r: r.pop("source_code"), "$"),
        (lambda r: r.__setitem__("task_id", ""), "$.task_id"),
    ],
)
def test_seed_schema_violation_is_rejected_with_path_and_batch_goes_on(tmp_path, seed_dicts, mutate, path):
    rows = copy.deepcopy(seed_dicts)
    mutate(rows[2])
    res = load_seeds(write_jsonl(tmp_path / "s.jsonl", rows))
    assert len(res.rows) == 4
    (rej,) = res.rejections
    assert rej.line == 3 and rej.code is RejectCode.SCHEMA and rej.path == path
    assert rej.kind == "seed"
    assert f"s.jsonl:3" in rej.message and path in rej.message


def test_all_schema_violations_of_a_row_are_listed(tmp_path, seed_dicts):
    row = copy.deepcopy(seed_dicts[0])
    row["compile"]["timeout_sec"] = -1
    row["run"]["timeout_sec"] = 0
    del row["prompt"]
    (rej,) = load_seeds(write_jsonl(tmp_path / "s.jsonl", [row])).rejections
    assert [i.path for i in rej.issues] == ["$", "$.compile.timeout_sec", "$.run.timeout_sec"]
    assert "'prompt' is a required property" in rej.issues[0].message


def test_duplicate_seed_task_id_keeps_first_and_names_its_line(tmp_path, seed_dicts):
    dup = copy.deepcopy(seed_dicts[0])
    dup["source_code"] = "int main(){}"
    res = load_seeds(write_jsonl(tmp_path / "s.jsonl", seed_dicts + [dup]))
    assert len(res.rows) == 5
    assert res.by_id[dup["task_id"]].source_code == seed_dicts[0]["source_code"]
    (rej,) = res.rejections
    assert rej.code is RejectCode.DUPLICATE_TASK_ID and rej.line == 6 and "line 1" in rej.issues[0].message


def test_bad_lines_are_rejected_with_line_numbers(tmp_path, seed_dicts):
    p = tmp_path / "s.jsonl"
    with open(p, "wb") as f:
        f.write((json.dumps(seed_dicts[0]) + "\n").encode())
        f.write(b"{not json\n")                                   # line 2
        f.write(b"\n   \n")                                        # lines 3-4 blank: skipped
        f.write(b"\x89PNG\r\n")                                    # line 5 binary junk
        f.write(b"\x00\x01\x02\xff\xfe garbage\n")                 # line 6 binary junk
        f.write(b'{"task_id": "a", "task_id": "b"}\n')             # line 7
        f.write(b'{"task_id": "x", "score": NaN}\n')               # line 8
        f.write(b'[1, 2, 3]\n')                                    # line 9: not an object
        f.write(b'{"x": 1e400}\n')                                 # line 10
        f.write((json.dumps(seed_dicts[1]) + "\n").encode())       # line 11
        f.write(json.dumps(seed_dicts[2])[:50].encode())           # line 12: torn, no newline
    res = load_seeds(p)
    assert [r.task_id for r in res.rows] == [seed_dicts[0]["task_id"], seed_dicts[1]["task_id"]]
    assert [(r.line, r.code.value) for r in res.rejections] == [
        (2, "MALFORMED_JSON"), (5, "NOT_UTF8"), (6, "NOT_UTF8"), (7, "DUPLICATE_JSON_KEY"),
        (8, "NON_FINITE_NUMBER"), (9, "SCHEMA"), (10, "NON_FINITE_NUMBER"), (12, "MALFORMED_JSON"),
    ]
    assert "column" in res.rejections[0].issues[0].message
    assert res.rejections[5].path == "$"


def test_whole_binary_file_and_missing_file_do_not_raise(tmp_path):
    p = tmp_path / "junk.jsonl"
    p.write_bytes(random.Random(0).randbytes(64 * 1024))
    res = load_seeds(p)
    assert res.rows == [] and res.rejections
    assert all(r.code in (RejectCode.NOT_UTF8, RejectCode.MALFORMED_JSON, RejectCode.SCHEMA,
                          RejectCode.NON_FINITE_NUMBER) for r in res.rejections)
    missing = load_seeds(tmp_path / "nope.jsonl")
    assert [r.code for r in missing.rejections] == [RejectCode.UNREADABLE_FILE]
    assert list(iter_returns(tmp_path / "nope.jsonl"))[0].code is RejectCode.UNREADABLE_FILE


def test_seeds_from_parquet_match_jsonl(tmp_path, seed_dicts):
    p = tmp_path / "seeds.parquet"
    pq.write_table(pa.Table.from_pylist(seed_dicts), p)
    res = load_seeds(p)
    assert res.rejections == []
    assert [r.model_dump() for r in res.rows] == [r.model_dump() for r in load_seeds(DATA / "seeds.jsonl").rows]
    assert res.rows[3].origin.line == 4


def test_parquet_missing_keys_read_back_as_null_are_pruned_then_validated(tmp_path, seed_dicts):
    rows = copy.deepcopy(seed_dicts)
    del rows[0]["public_checker"]["strip_trailing_whitespace"]  # optional key absent in one row
    del rows[1]["prompt"]                                          # required key absent in one row
    p = tmp_path / "seeds.data"  # no suffix: detected by the PAR1 magic
    pq.write_table(pa.Table.from_pylist(rows), p)
    res = load_seeds(p)
    assert len(res.rows) == 4
    assert res.by_id[rows[0]["task_id"]].public_checker.strip_trailing_whitespace is False
    (rej,) = res.rejections
    assert rej.line == 2 and rej.path == "$" and "'prompt'" in rej.issues[0].message


# --------------------------------------------------------------------------------------------------
# return rows


def test_unknown_task_and_duplicate_rows_and_several_samples(tmp_path, seed_dicts, seeds):
    s0 = seed_dicts[0]
    good_a = answer_row(s0, "<reasoning>a</reasoning>\n```cpp\nint main(){}\n```")
    good_b = answer_row(s0, "<reasoning>b</reasoning>\n```cpp\nint main(){}\n```")
    unknown = dict(good_a, task_id="nope")
    p = write_jsonl(tmp_path / "r.jsonl", [good_a, good_b, unknown, copy.deepcopy(good_a)])
    res = load_returns(p, seeds)
    assert len(res.rows) == 2
    a, b = res.rows
    assert a.task_id == b.task_id and a.key != b.key
    assert a.key.startswith(s0["task_id"] + ":")
    assert [(r.line, r.code.value) for r in res.rejections] == [(3, "UNKNOWN_TASK_ID"), (4, "DUPLICATE_ROW")]
    assert "line 1" in res.rejections[1].issues[0].message
    # without seeds, task ids are not checked
    assert len(load_returns(p).rows) == 3


def test_same_answer_under_altered_prompt_is_a_different_row(tmp_path, seed_dicts):
    s0 = seed_dicts[0]
    a = answer_row(s0, "<reasoning>a</reasoning>\n```cpp\nint main(){}\n```")
    b = copy.deepcopy(a)
    b["messages"][0]["content"] += " "
    res = load_returns(write_jsonl(tmp_path / "r.jsonl", [a, b]))
    assert len(res.rows) == 2 and res.rows[0].key != res.rows[1].key


def test_ten_megabyte_answer_is_rejected_and_neighbours_survive(tmp_path, seed_dicts, seeds):
    big = answer_row(seed_dicts[1], "<reasoning>x</reasoning>\n```cpp\n" + "// pad\n" * (10 * 1024 * 1024 // 7) + "```")
    ok = answer_row(seed_dicts[1], "<reasoning>x</reasoning>\n```cpp\nint main(){}\n```")
    p = write_jsonl(tmp_path / "r.jsonl", [ok, big, answer_row(seed_dicts[2], "x")])
    assert p.stat().st_size > 10 * 1024 * 1024
    res = load_returns(p, seeds)
    assert len(res.rows) == 2
    (rej,) = res.rejections
    assert rej.line == 2 and rej.code is RejectCode.ANSWER_TOO_LARGE
    assert rej.path == f"$.messages[{len(seed_dicts[1]['messages'])}].content"
    assert str(MAX_ANSWER_BYTES) in rej.issues[0].message


def test_line_above_the_row_limit_is_skipped_unparsed(tmp_path, seed_dicts, seeds):
    huge = answer_row(seed_dicts[0], "y" * (3 * 1024 * 1024))
    ok = answer_row(seed_dicts[0], "<reasoning>x</reasoning>\n```cpp\nint main(){}\n```")
    p = write_jsonl(tmp_path / "r.jsonl", [huge, ok])
    res = load_returns(p, seeds, max_line_bytes=1024 * 1024, max_answer_bytes=4 * 1024 * 1024)
    assert [r.origin.line for r in res.rows] == [2]
    (rej,) = res.rejections
    assert rej.line == 1 and rej.code is RejectCode.TOO_LARGE and rej.task_id is None


def test_return_schema_violations(tmp_path, seed_dicts, seeds):
    s0 = seed_dicts[0]
    rows = []
    r = answer_row(s0, "x"); r["verification"]["score"] = 1.01; rows.append(r)
    r = answer_row(s0, "x"); r["verification"]["runtime_ms"] = -3; rows.append(r)
    r = answer_row(s0, "x"); r["verification"]["compile_ok"] = "yes"; rows.append(r)
    r = answer_row(s0, "x"); del r["verification"]["notes"]; rows.append(r)
    r = answer_row(s0, "x"); r["messages"][2]["role"] = "tool"; rows.append(r)
    r = answer_row(s0, "x"); r["messages"] = [r["messages"][0]]; rows.append(r)
    r = answer_row(s0, "x"); r["messages"][1]["content"] = None; rows.append(r)
    r = answer_row(s0, "x"); del r["task_id"]; rows.append(r)
    res = load_returns(write_jsonl(tmp_path / "r.jsonl", rows), seeds)
    assert res.rows == []
    assert [rj.path for rj in res.rejections] == [
        "$.verification.score", "$.verification.runtime_ms", "$.verification.compile_ok", "$.verification",
        "$.messages[2].role", "$.messages", "$.messages[1].content", "$",
    ]
    assert all(rj.code is RejectCode.SCHEMA for rj in res.rejections)
    assert res.rejections[0].to_dict()["reasons"][0] == {
        "code": "SCHEMA", "path": "$.verification.score", "message": "1.01 violates maximum=1"}


def test_returns_from_parquet(tmp_path, seeds):
    rows = [json.loads(l) for l in (DATA / "returns.jsonl").read_text().splitlines()[:7]]
    p = tmp_path / "r.parquet"
    pq.write_table(pa.Table.from_pylist(rows), p)
    res = load_returns(p, seeds)
    assert res.rejections == [] and len(res.rows) == 7
    assert [r.key for r in res.rows] == [r.key for r in load_returns(DATA / "returns.jsonl", seeds).rows[:7]]
    assert res.rows[0].verification.all_hidden_tests_pass is None  # a legitimate null survives pruning


def test_writer_fields_are_typed(tmp_path, seed_dicts):
    r = answer_row(seed_dicts[0], "x", sample_index=3, model="m", finish_reason="length")
    (row,) = load_returns(write_jsonl(tmp_path / "r.jsonl", [r])).rows
    assert isinstance(row, ReturnRow) and row.sample_index == 3 and row.model == "m"
    assert row.raw["finish_reason"] == "length"


# --------------------------------------------------------------------------------------------------
# hidden tests


def test_shipped_hidden_tests_load(seeds):
    h = load_hidden_tests(DATA / "hidden_tests.json", known_task_ids=seeds)
    assert h.rejections == [] and h.invalid_tasks == set()
    assert set(h.tests) == set(seeds)
    assert all(len(v) >= 3 for v in h.tests.values())
    assert h.for_task("dummy_pie_cpp_0004_first_repeated")[0].stdout == "NONE\n"
    assert h.for_task("unknown") == []


def test_hidden_tests_object_with_bad_entries(tmp_path, seeds):
    ids = sorted(seeds)
    doc = {
        ids[0]: [{"name": "a", "stdin": "1\n2\n", "stdout": "2\n"}],
        ids[1]: [{"name": "a", "stdin": "1\n", "stdout": 5}],                       # wrong type
        ids[2]: [{"name": "a", "stdin": "", "stdout": ""}, {"name": "a", "stdin": "", "stdout": ""}],  # dup name
        ids[3]: [],                                                                   # no hidden tests
        "ghost": [{"name": "a", "stdin": "", "stdout": ""}],                          # unknown task
    }
    p = tmp_path / "h.json"
    p.write_text(json.dumps(doc))
    h = load_hidden_tests(p, known_task_ids=seeds)
    assert set(h.tests) == {ids[0], ids[3]}
    assert h.invalid_tasks == {ids[1], ids[2], "ghost"}
    by_task = {r.task_id: r for r in h.rejections}
    assert by_task[ids[1]].path == f"$.{ids[1]}[0].stdout"
    assert by_task[ids[2]].path.endswith("[1].name") and "repeats" in by_task[ids[2]].issues[0].message
    assert by_task["ghost"].code is RejectCode.UNKNOWN_TASK_ID


def test_hidden_tests_jsonl(tmp_path, seeds):
    ids = sorted(seeds)
    lines = [
        json.dumps({"task_id": ids[0], "tests": [{"name": "h1", "stdin": "1\n4\n", "stdout": "4\n"}]}),
        "{broken",
        json.dumps({"task_id": ids[1], "cases": []}),
        json.dumps({"task_id": ids[0], "tests": []}),
    ]
    p = tmp_path / "h.jsonl"
    p.write_text("\n".join(lines) + "\n")
    h = load_hidden_tests(p, known_task_ids=seeds)
    assert [t.name for t in h.for_task(ids[0])] == ["h1"]
    assert [(r.line, r.code.value) for r in h.rejections] == [(2, "MALFORMED_JSON"), (3, "SCHEMA"), (4, "DUPLICATE_TASK_ID")]
    assert h.invalid_tasks == {ids[1]}


def test_hidden_tests_jsonl_detected_without_suffix(tmp_path, seeds):
    ids = sorted(seeds)
    p = tmp_path / "h.json"
    p.write_text("\n".join(json.dumps({"task_id": i, "tests": []}) for i in ids[:2]) + "\n")
    h = load_hidden_tests(p, known_task_ids=seeds)
    assert set(h.tests) == set(ids[:2]) and h.rejections == []


def test_hidden_tests_bad_files(tmp_path):
    p = tmp_path / "h.json"
    p.write_text("[1, 2]")
    assert load_hidden_tests(p).rejections[0].code is RejectCode.SCHEMA
    p.write_text("{oops")
    assert load_hidden_tests(p).rejections[0].code is RejectCode.MALFORMED_JSON
    p.write_bytes(b"\xff\xfe\x00")
    assert load_hidden_tests(p).rejections[0].code is RejectCode.NOT_UTF8
    assert load_hidden_tests(tmp_path / "missing.json").rejections[0].code is RejectCode.UNREADABLE_FILE


def test_a_rejected_return_row_keeps_its_demo_id(tmp_path, seed_dicts, seeds):
    """A return row that fails to load is named by its ``demo_id`` when it has one (the row column of
    `oracle verify`'s table, ``rejected.jsonl``, the message), whatever else is wrong with it."""
    from arbiter.pipelines.oracle.records import load_rejection_record

    s0 = seed_dicts[0]
    rows = []
    r = answer_row(s0, "x"); r["demo_id"] = "bad-schema"; r["verification"]["score"] = 2; rows.append(r)
    r = answer_row(s0, "x"); r["demo_id"] = "no-messages"; del r["messages"]; rows.append(r)
    r = answer_row(s0, "x"); r["demo_id"] = 7; r["task_id"] = 5; rows.append(r)  # (not a string: no id)
    r = answer_row(s0, "x"); r["demo_id"] = "unknown-task"; r["task_id"] = "no_such_task"; rows.append(r)
    res = load_returns(write_jsonl(tmp_path / "r.jsonl", rows), seeds)
    assert res.rows == []
    assert [rj.demo_id for rj in res.rejections] == ["bad-schema", "no-messages", None, "unknown-task"]
    first = res.rejections[0]
    assert "(demo_id 'bad-schema')" in first.message and first.to_dict()["demo_id"] == "bad-schema"
    assert [load_rejection_record(rj)["demo_id"] for rj in res.rejections] == [
        "bad-schema", "no-messages", None, "unknown-task"]


def test_a_record_cut_short_is_malformed_where_it_ends(tmp_path):
    """The column points at the record's end, not at a "line 2" its line ending made (new user)."""
    p = tmp_path / "cut.jsonl"
    p.write_bytes(b'{"task_id": 5\n{"task_id": 5\r\n')
    messages = [r.issues[0].message for r in load_seeds(p).rejections]
    assert messages == ["malformed JSON: Expecting ',' delimiter at column 14"] * 2
