"""Test-suite normalizers on the real samples in ../shared and on malformed payloads.

Counts are recomputed here from the raw files by independent means (plain json/ast/tarfile code),
never hard-coded. Every error path asserts that the message names the row and the field/shape.
"""

from __future__ import annotations

import ast
import base64
import functools
import gzip
import io
import json
import os
import pickle
import re
import tarfile
import zlib
from pathlib import Path

import pytest

from arbiter.judge.encodings import (
    InvalidTestSuite,
    PieTestArchive,
    apps_input_output_to_suite,
    codescope_row_to_suite,
    codescope_testcases_to_suite,
    decode_lcb_private_tests,
    leetcode_row_to_suite,
    leetcode_signature,
    leetcode_to_suite,
    livecodebench_row_to_suite,
    livecodebench_to_suite,
    load_apps_problem,
    load_pie_tests,
    nemo_gym_row_to_suite,
    nemo_gym_unit_tests_to_suite,
    open_pie_archive,
    oracle_tests_to_suite,
    oracle_visible_suite,
    pie_suite_from_dir,
    read_oracle_hidden_tests,
    verl_ground_truth_to_suite,
)
from arbiter.judge.encodings.pyliteral import UnsafeLiteral, parse_call_arguments, parse_literal
from arbiter.judge.encodings.safe_pickle import UnsafePickle, decode_lcb_compressed
from arbiter.judge.testsuite import CallCase, StdioCase

from conftest import SHARED  # noqa: E402  (ARBITER_SHARED, else the folder beside the repo)
REAL = SHARED / "realdata"
PIE_TAR = REAL / "pie_public_tests" / "public_test_cases.tar.gz"


def invalid(fn, *args, **kwargs) -> str:
    """Run ``fn`` expecting InvalidTestSuite; return its message."""
    with pytest.raises(InvalidTestSuite) as info:
        fn(*args, **kwargs)
    return str(info.value)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ================================ verl ground truth =============================================

STDIN_DICT = {"inputs": ["3 30\n2 2 1\n", "3 20\n2 1 1\n"], "outputs": ["5\n", "-1\n"]}
STDIN_LIST = [
    {"type": "stdin_stdout", "input": "3 30\n2 2 1", "output": "5"},
    {"type": "stdin_stdout", "input": "3 20\n2 1 1", "output": "-1"},
]
CALL_LIST = [
    {"type": "function_call", "fn_name": "is_anagram", "input": ["foefet", "toffee"], "output": [True]},
    {"type": "function_call", "fn_name": "is_anagram", "input": ["apple", "pale"], "output": [False]},
    {"type": "function_call", "fn_name": "pair", "input": [[1, 2]], "output": [[2, 1]]},
]


def test_verl_three_encodings_from_json_strings():
    s = verl_ground_truth_to_suite(json.dumps(STDIN_DICT), row="cco_1")
    assert s.origin == "verl:dict" and len(s) == 2
    assert s.cases[0] == StdioCase("0", b"3 30\n2 2 1\n", (b"5\n",))

    s = verl_ground_truth_to_suite(json.dumps(STDIN_LIST), row="deepcoder_2")
    assert s.origin == "verl:stdin_stdout" and [c.stdin for c in s] == [b"3 30\n2 2 1", b"3 20\n2 1 1"]

    s = verl_ground_truth_to_suite(json.dumps(CALL_LIST), row="deepcoder_3")
    assert s.origin == "verl:function_call" and s.is_call_based
    assert [(c.fn_name, c.args, c.expected) for c in s] == [
        ("is_anagram", ("foefet", "toffee"), (True,)),
        ("is_anagram", ("apple", "pale"), (False,)),
        ("pair", ([1, 2],), ([2, 1],)),  # output [ret] unwrapped once, only the return value accepted
    ]


def test_verl_dict_with_fn_name_taco_conventions():
    gt = {
        "fn_name": "total",
        "inputs": [[[1, 2, 3]], "[4, 4, 5, -1]", '"ab"\n3'],  # args list, or JSON args one per line
        "outputs": [[8], 30, [[1, 2]]],  # [x] wrapped, bare, and a wrapped list
    }
    s = verl_ground_truth_to_suite(gt, row="taco_7")
    assert [c.args for c in s] == [([1, 2, 3],), ([4, 4, 5, -1],), ("ab", 3)]
    assert [c.expected for c in s] == [(8, [8]), (30,), ([1, 2], [[1, 2]])]


def test_verl_stdin_lists_of_lines_are_joined():
    gt = {"inputs": [["2", "1 2"]], "outputs": [["3", "4"]]}
    s = verl_ground_truth_to_suite(gt, row="taco_9")
    assert s.cases[0].stdin == b"2\n1 2\n" and s.cases[0].expected == (b"3\n4\n",)


def test_verl_parquet_shapes_numpy_and_pyarrow(tmp_path):
    np = pytest.importorskip("numpy")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "reward_model": [
                {"style": "rule", "ground_truth": json.dumps(STDIN_DICT)},  # the card's JSON string
                {"style": "rule", "ground_truth": json.dumps(CALL_LIST)},
            ],
            "gt_struct": [STDIN_DICT, STDIN_DICT],
            "gt_list": [STDIN_LIST, STDIN_LIST],
        }
    )
    pq.write_table(table, tmp_path / "train.parquet")
    back = pq.read_table(tmp_path / "train.parquet")
    rows = back.to_pylist()
    assert len(verl_ground_truth_to_suite(rows[0]["reward_model"]["ground_truth"], row="0")) == 2
    assert verl_ground_truth_to_suite(rows[1]["reward_model"]["ground_truth"], row="1").is_call_based

    frame = back.to_pandas()  # what verl's pandas/HF loaders hand over: numpy arrays inside
    struct = frame["gt_struct"][0]
    assert isinstance(struct["inputs"], np.ndarray)
    assert verl_ground_truth_to_suite(struct, row="2") == verl_ground_truth_to_suite(STDIN_DICT, row="2")
    listed = frame["gt_list"][0]
    assert isinstance(listed, np.ndarray)
    assert verl_ground_truth_to_suite(listed, row="3") == verl_ground_truth_to_suite(STDIN_LIST, row="3")
    scalar = back.column("gt_list")[0]  # a pyarrow ListScalar
    assert verl_ground_truth_to_suite(scalar, row="4") == verl_ground_truth_to_suite(STDIN_LIST, row="4")
    numpy_scalars = {"fn_name": np.str_("f"), "inputs": np.array([[np.int64(1)]], dtype=object), "outputs": [np.float64(2.5)]}
    case = verl_ground_truth_to_suite(numpy_scalars, row="5").cases[0]
    assert case.args == (1,) and type(case.args[0]) is int and case.expected == (2.5,) and type(case.fn_name) is str


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_verl_real_rows_in_card_encodings():
    """Real tests rewritten into the card's encodings: APPS (dict), CodeScope (stdin_stdout
    list), APPS 2404 (function_call)."""
    for folder in sorted((REAL / "coderl_apps" / "train").iterdir()):
        raw = (folder / "input_output.json").read_text()
        s = verl_ground_truth_to_suite(raw, row=folder.name)
        assert len(s) == len(json.loads(raw)["inputs"])
        assert s.cases == load_apps_problem(folder).cases
    row = jsonl(REAL / "codescope_codeopt" / "code_optimization_data.jsonl")[0]
    tests = ast.literal_eval(row["testcases"])
    gt = [{"type": "stdin_stdout", "input": t["input"], "output": t["output"][0]} for t in tests]
    s = verl_ground_truth_to_suite(json.dumps(gt), row=str(row["id"]))
    assert len(s) == len(tests) and s.cases[3].stdin == tests[3]["input"].encode()
    io_2404 = json.loads((REAL / "coderl_apps/train/2404/input_output.json").read_text())
    gt = [
        {"type": "function_call", "fn_name": io_2404["fn_name"], "input": args, "output": [out]}
        for args, out in zip(io_2404["inputs"], io_2404["outputs"])
    ]
    case = verl_ground_truth_to_suite(gt, row="2404").cases[0]
    assert case.fn_name == "findKthPositive" and case.args == tuple(io_2404["inputs"][0])
    assert case.expected == (io_2404["outputs"][0],)


@pytest.mark.parametrize(
    "payload,field,shape",
    [
        ('{"inputs": ["1"], "outputs": ', "ground_truth", "not valid JSON"),
        ("[]", "ground_truth", "zero test cases"),
        ({"inputs": [], "outputs": []}, "ground_truth", "zero test cases"),
        ({"inputs": ["1", "2"], "outputs": ["1"]}, "ground_truth", "2 inputs but 1 outputs"),
        ({"inputs": ["1"]}, "ground_truth", "missing key(s) ['outputs']"),
        ({"inputs": "1", "outputs": "2"}, "ground_truth.inputs", "expected a list"),
        ({"inputs": [1], "outputs": ["1"]}, "ground_truth.inputs[0]", "expected a string or a list of lines"),
        ({"inputs": ["1"], "outputs": [None]}, "ground_truth.outputs[0]", "got null"),
        ({"fn_name": 3, "inputs": [[1]], "outputs": [1]}, "ground_truth.fn_name", "expected a string"),
        ({"fn_name": "f", "inputs": [5], "outputs": [1]}, "ground_truth.inputs[0]", "list of arguments"),
        ({"fn_name": "f", "inputs": ["1\n\n2"], "outputs": [1]}, "ground_truth.inputs[0]", "line 2 is not a JSON argument"),
        ('"just a string"', "ground_truth", "got str"),
        ("42", "ground_truth", "got int"),
        ([["stdin", "1", "2"]], "ground_truth[0]", "expected a case object, got list"),
        ([{"type": "stdio", "input": "1", "output": "2"}], "ground_truth[0].type", "unknown type 'stdio'"),
        ([{"input": "1", "output": "2"}], "ground_truth[0].type", "missing 'type'"),
        (STDIN_LIST[:1] + CALL_LIST[:1], "ground_truth", "mixed case types"),
        ([{"type": "stdin_stdout", "input": "1"}], "ground_truth[0]", "lacks ['output']"),
        ([{"type": "function_call", "input": [1], "output": [1]}], "ground_truth[0]", "lacks ['fn_name']"),
        ([{"type": "function_call", "fn_name": "f", "input": [1], "output": 3}], "ground_truth[0].output", "one-element list"),
        ([{"type": "function_call", "fn_name": "f", "input": [1], "output": [1, 2]}], "ground_truth[0].output", "a list of 2 items"),
        ([{"type": "function_call", "fn_name": "", "input": [1], "output": [1]}], "ground_truth[0].fn_name", "non-empty string"),
    ],
)
def test_verl_malformed_payloads_name_row_and_shape(payload, field, shape):
    message = invalid(verl_ground_truth_to_suite, payload, row="deepcoder_42")
    assert message.startswith("row 'deepcoder_42': ")
    assert field in message and shape in message, message


# ================================ oracle seed ===================================================


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_oracle_seed_visible_tests():
    rows = jsonl(SHARED / "seed" / "data" / "oracle_seed.jsonl")
    total = 0
    for row in rows:
        suite = oracle_visible_suite(row)
        assert suite.origin == "oracle_seed"
        assert [c.name for c in suite] == [t["name"] for t in row["visible_tests"]]
        assert [c.expected for c in suite] == [(t["stdout"].encode(),) for t in row["visible_tests"]]
        total += len(suite)
    assert total == sum(len(r["visible_tests"]) for r in rows) and len(rows) == len({r["task_id"] for r in rows})


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_oracle_hidden_tests_json_and_jsonl(tmp_path):
    rows = jsonl(SHARED / "seed" / "data" / "oracle_seed.jsonl")
    hidden = {
        r["task_id"]: r["visible_tests"] + [{"name": "hidden_1", "stdin": "1\n5\n", "stdout": "0\n"}] for r in rows
    }
    as_json = tmp_path / "hidden.json"
    as_json.write_text(json.dumps(hidden))
    as_jsonl = tmp_path / "hidden.jsonl"
    as_jsonl.write_text("\n".join(json.dumps({"task_id": k, "tests": v}) for k, v in hidden.items()) + "\n\n")
    one = tmp_path / "one.jsonl"
    first = rows[0]["task_id"]
    one.write_text(json.dumps({"task_id": first, "tests": hidden[first]}))
    for path in (as_json, as_jsonl):
        read = read_oracle_hidden_tests(path)
        assert list(read) == [r["task_id"] for r in rows]
        suites = {k: oracle_tests_to_suite(v, row=k, origin="oracle_hidden", field="hidden_tests") for k, v in read.items()}
        assert all(len(s) == len(hidden[k]) and s.cases[-1].name == "hidden_1" for k, s in suites.items())
    assert list(read_oracle_hidden_tests(one)) == [first]


def test_oracle_malformed(tmp_path):
    row = "dummy_pie_cpp_0001_sum_even"
    assert "zero test cases" in invalid(oracle_tests_to_suite, [], row=row)
    msg = invalid(oracle_tests_to_suite, [{"name": "a", "stdin": "1"}], row=row)
    assert row in msg and "visible_tests[0]" in msg and "missing 'stdout'" in msg
    msg = invalid(oracle_tests_to_suite, [{"name": "a", "stdin": "1", "stdout": 2}], row=row)
    assert "visible_tests[0].stdout" in msg and "got int" in msg
    msg = invalid(oracle_tests_to_suite, ["1 2"], row=row)
    assert "visible_tests[0]" in msg and "got str" in msg
    msg = invalid(oracle_tests_to_suite, {"name": "a"}, row=row)
    assert "expected a list" in msg and "got dict" in msg
    case = {"name": "a", "stdin": "", "stdout": ""}
    assert "duplicate case name 'a'" in invalid(oracle_tests_to_suite, [case, case], row=row)
    assert "visible_tests: missing" in invalid(oracle_visible_suite, {"task_id": row})

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a", "tests": []}\n{"task_id": "b", "tests": [\n')
    msg = invalid(read_oracle_hidden_tests, bad)
    assert "bad.jsonl" in msg and "line 2" in msg and "not valid JSON" in msg
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"task_id": "a", "tests": []}\n{"task_id": "a", "tests": []}\n')
    assert "appears twice" in invalid(read_oracle_hidden_tests, dup)
    notlist = tmp_path / "notlist.json"
    notlist.write_text('{"a": {"name": "x"}, "b": []}')
    assert "hidden tests['a']" in invalid(read_oracle_hidden_tests, notlist)
    norecord = tmp_path / "norecord.jsonl"
    norecord.write_text('{"id": "a", "tests": []}\n[1]\n')
    assert "'task_id' (string) and 'tests' (list)" in invalid(read_oracle_hidden_tests, norecord)
    assert "cannot read" in invalid(read_oracle_hidden_tests, tmp_path / "missing.json")


# ================================ PIE / CodeNet =================================================


def _tar_index() -> dict[str, dict[str, set[int]]]:
    """Independent count: problem -> {"input": {N}, "output": {N}} from the member names."""
    index: dict[str, dict[str, set[int]]] = {}
    with tarfile.open(PIE_TAR) as archive:
        for name in archive.getnames():
            parts = name.split("/")
            if len(parts) == 3 and parts[2].endswith(".txt"):
                kind, number, _ = parts[2].split(".")
                index.setdefault(parts[1], {"input": set(), "output": set()})[kind].add(int(number))
    return index


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_pie_public_tarball_every_problem():
    index = _tar_index()
    archive = open_pie_archive(PIE_TAR)
    assert archive is open_pie_archive(str(PIE_TAR))  # cached: one scan for many problems
    assert archive.problems == sorted(index)
    total = 0
    for problem, files in index.items():
        suite = archive.suite(problem)
        assert [c.name for c in suite] == [f"input.{n}" for n in sorted(files["input"])]
        total += len(suite)
    assert total == sum(len(f["input"]) for f in index.values())
    assert total == sum(len(f["output"]) for f in index.values())


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_pie_val_problems_from_tarball_match_members():
    val = jsonl(REAL / "pie_purdue" / "val.jsonl")
    problems = sorted({r["problem_id"] for r in val})
    with tarfile.open(PIE_TAR) as archive:
        for problem in problems:
            suite = load_pie_tests(PIE_TAR, problem)
            for case in suite:
                n = case.name.split(".")[1]
                assert case.stdin == archive.extractfile(f"./{problem}/input.{n}.txt").read()
                assert case.expected == (archive.extractfile(f"./{problem}/output.{n}.txt").read(),)


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_pie_purdue_folders_numeric_order():
    root = REAL / "pie_purdue"
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        files = os.listdir(folder / "test_cases")
        numbers = sorted(int(f.split(".")[1]) for f in files if f.startswith("input."))
        suite = load_pie_tests(root, folder.name)
        assert [c.name for c in suite] == [f"input.{n}" for n in numbers]
        assert suite.cases[-1].stdin == (folder / "test_cases" / f"input.{numbers[-1]}.txt").read_bytes()
        assert len({n for n in numbers}) == len([f for f in files if f.startswith("output.")])
    big = load_pie_tests(root, "p02587")
    names = [c.name for c in big]
    assert names.index("input.10") == names.index("input.9") + 1


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_pie_usable_case_ids_and_tar_equals_dir(tmp_path):
    folder = REAL / "pie_purdue" / "p03415" / "test_cases"
    chosen = load_pie_tests(REAL / "pie_purdue", "p03415", usable_case_ids=[12, "3", "input.100"])
    assert [c.name for c in chosen] == ["input.3", "input.12", "input.100"]
    packed = tmp_path / "tests.tar.gz"
    with tarfile.open(packed, "w:gz") as archive:
        for name in sorted(os.listdir(folder)):
            archive.add(folder / name, arcname=f"./p03415/{name}")
    assert PieTestArchive(packed).suite("p03415") == pie_suite_from_dir(folder)
    assert PieTestArchive(packed, problems=["p00000"]).problems == []


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_pie_malformed(tmp_path):
    problem = tmp_path / "p99999"
    problem.mkdir()
    (problem / "input.0.txt").write_text("1\n")
    (problem / "output.0.txt").write_text("1\n")
    (problem / "input.3.txt").write_text("2\n")
    msg = invalid(load_pie_tests, tmp_path, "p99999")
    assert "p99999" in msg and "output.3.txt" in msg and "missing" in msg
    assert len(load_pie_tests(tmp_path, "p99999", usable_case_ids=[0])) == 1
    assert "case 7 has no file" in invalid(load_pie_tests, tmp_path, "p99999", usable_case_ids=[7])
    assert "not a case number" in invalid(load_pie_tests, tmp_path, "p99999", usable_case_ids=["x"])
    (problem / "output.5.txt").write_text("9\n")
    (problem / "output.3.txt").write_text("2\n")
    assert "output.5.txt: has no matching input" in invalid(load_pie_tests, tmp_path, "p99999")
    (problem / "input.00.txt").write_text("2\n")
    assert "appears twice" in invalid(pie_suite_from_dir, problem)
    empty = tmp_path / "p00001"
    empty.mkdir()
    assert "zero test cases" in invalid(load_pie_tests, tmp_path, "p00001")
    assert "no such test folder" in invalid(load_pie_tests, tmp_path, "p12345")
    assert "p12345" in invalid(load_pie_tests, PIE_TAR, "p12345")

    packed = tmp_path / "broken.tar.gz"
    data = b"5\n"
    with tarfile.open(packed, "w:gz") as archive:
        info = tarfile.TarInfo("./p00002/input.1.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    msg = invalid(load_pie_tests, packed, "p00002")
    assert "p00002" in msg and "output.1.txt" in msg
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"not a tar")
    assert "cannot read the archive" in invalid(PieTestArchive, garbage)


# ================================ APPS / TACO ===================================================


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_apps_real_folders():
    for folder in sorted((REAL / "coderl_apps" / "train").iterdir()):
        raw = json.loads((folder / "input_output.json").read_text())
        suite = load_apps_problem(folder)
        assert len(suite) == len(raw["inputs"]) == len(raw["outputs"])
        if "fn_name" in raw:
            assert suite.is_call_based and all(c.fn_name == raw["fn_name"] for c in suite)
            for case, args, out in zip(suite, raw["inputs"], raw["outputs"]):
                assert case.args == tuple(args)
                assert case.expected[0] == (out[0] if isinstance(out, list) and len(out) == 1 else out)
        else:
            assert [c.stdin for c in suite] == [i.encode() for i in raw["inputs"]]
            assert [c.expected for c in suite] == [(o.encode(),) for o in raw["outputs"]]


def test_apps_wrapped_outputs_accept_both():
    # APPS 4184 style ([[false], [true]]) and 2404 style ([9])
    s = apps_input_output_to_suite('{"fn_name": "is_prime", "inputs": [[0], [2]], "outputs": [[false], [true]]}', row="4184")
    assert [c.expected for c in s] == [(False, [False]), (True, [True])]
    s = apps_input_output_to_suite({"fn_name": "f", "inputs": [[[2, 3], 5]], "outputs": [9]}, row="2404")
    assert s.cases[0].expected == (9,)


def test_json_line_arguments_come_with_json_text_outputs():
    """verl prime_code's (and PRIME's, LiveCodeBench's) call convention: arguments one JSON value a
    line, the output the JSON text of the return value; read as that value, with the x / [x] rule."""
    s = apps_input_output_to_suite({"fn_name": "f", "inputs": ["[2, 3]\n5", '"ab"\n"c"', "1"],
                                    "outputs": ["9", '"abc"', "[false]"]}, row="prime")
    assert [c.args for c in s] == [([2, 3], 5), ("ab", "c"), (1,)]
    assert [c.expected for c in s] == [(9,), ("abc",), (False, [False])]
    # a decoded output beside JSON-line arguments is kept as it is (no text to decode)
    assert apps_input_output_to_suite({"fn_name": "f", "inputs": ["1"], "outputs": [[3]]}, row="t").cases[0].expected == (3, [3])
    message = invalid(apps_input_output_to_suite, {"fn_name": "f", "inputs": ["1", "2"], "outputs": ["1", "3 4"]}, row="p")
    assert "row 'p': input_output.outputs[1]: not valid JSON" in message, message


def test_apps_malformed(tmp_path):
    assert "not valid JSON" in invalid(apps_input_output_to_suite, "{", row="0007")
    msg = invalid(apps_input_output_to_suite, {"inputs": ["1"], "outputs": ["1", "2"]}, row="0007")
    assert "row '0007'" in msg and "1 inputs but 2 outputs" in msg
    assert "zero test cases" in invalid(apps_input_output_to_suite, {"inputs": [], "outputs": []}, row="0007")
    msg = invalid(apps_input_output_to_suite, [1, 2], row="0007")
    assert "input_output" in msg and "got list" in msg
    msg = invalid(load_apps_problem, tmp_path / "4321")
    assert "row '4321'" in msg and "input_output.json" in msg


# ================================ LeetCodeDataset ===============================================

LEETCODE = REAL / "leetcodedataset" / "LeetCodeDataset-v0.3.1-test.jsonl.gz"


@functools.lru_cache(maxsize=1)
def _leetcode_rows() -> tuple[dict, ...]:
    with gzip.open(LEETCODE, "rt", encoding="utf-8") as handle:
        return tuple(json.loads(line) for line in handle)


class _Inf(ast.NodeTransformer):
    """For the independent parse of ``check()``: the preamble's ``inf`` as a float constant."""

    def visit_Name(self, node):
        return ast.Constant(float("inf")) if node.id == "inf" else node


def _check_asserts(test_source: str) -> list[tuple[dict, object]]:
    """(kwargs, expected) of every ``assert candidate(...) == expected`` in a row's ``test``."""
    function = ast.parse(test_source).body[0]
    out = []
    for statement in function.body:
        assert isinstance(statement, ast.Assert)
        compare = _Inf().visit(statement.test)
        call = compare.left
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        expected = ast.literal_eval(compare.comparators[0])
        out.append((kwargs, expected))
    return out


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_leetcode_every_row_matches_its_check_function():
    """Each kept pair equals the corresponding assert of the row's own ``check(candidate)``
    (the dataset's verified ground truth): same kwargs, same expected value and type."""
    rows = _leetcode_rows()
    kept = dropped = 0
    for row in rows:
        result = leetcode_row_to_suite(row)
        asserts = _check_asserts(row["test"])
        assert len(result.suite) == len(asserts), row["task_id"]
        for case, (kwargs, expected) in zip(result.suite, asserts):
            assert case.fn_name == row["entry_point"].split(".")[-1]
            assert case.kwargs == {k: _plain(v) for k, v in kwargs.items()} and case.args == ()
            assert case.expected == (_plain(expected),)
            assert type(case.expected[0]) is type(_plain(expected)), (row["task_id"], case.name)
        kept += len(result.suite)
        dropped += len(result.dropped)
    pairs = sum(len(r["input_output"]) for r in rows)
    failures = sum(
        1 for r in rows for p in r["input_output"] if p["output"].startswith("Error:") or p["output"] == "Execution timed out"
    )
    assert kept == pairs - failures and dropped == failures and kept > 0


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_leetcode_string_returns_are_bare_strings():
    rows = [r for r in _leetcode_rows() if "-> str:" in r["starter_code"]]
    assert rows
    for row in rows:
        result = leetcode_row_to_suite(row)
        assert result.signature.returns_str
        assert all(isinstance(c.expected[0], str) for c in result.suite)
    empties = [c for r in rows for c in leetcode_row_to_suite(r).suite if c.expected == ("",)]
    assert empties  # e.g. find-valid-pair-of-adjacent-digits-in-string returns ""


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_leetcode_linked_list_and_tree_rows_keep_plain_lists():
    starter = (
        "class Solution:\n"
        "    def reverseKGroup(self, head: Optional[ListNode], k: int) -> Optional[ListNode]:\n        "
    )
    result = leetcode_to_suite(
        [{"input": "head = [1,2,3,4,5], k = 2", "output": "[2, 1, 4, 3, 5]"}, {"input": "head = [], k = 1", "output": "None"}],
        "Solution().reverseKGroup",
        row="reverse-nodes-in-k-group",
        starter_code=starter,
    )
    assert result.needs_node_conversion
    assert result.signature.node_params == {"head": "Optional[ListNode]"} and result.signature.node_return == "ListNode"
    assert [c.kwargs for c in result.suite] == [{"head": [1, 2, 3, 4, 5], "k": 2}, {"head": [], "k": 1}]
    # "None" for a node return is the empty list, [] as the harness returns it (was None: a WA for correct programs)
    assert [c.expected for c in result.suite] == [([2, 1, 4, 3, 5],), ([],)]
    assert result.signature.node_types == (("ListNode", None), "ListNode")
    tree = leetcode_signature("class Solution:\n    def maxDepth(self, root: Optional[TreeNode]) -> int:\n", "maxDepth")
    assert tree.node_params == {"root": "Optional[TreeNode]"} and tree.node_return is None
    assert parse_call_arguments("root = [3,9,20,null,null,15,7]")[1] == {"root": [3, 9, 20, None, None, 15, 7]}
    real = [leetcode_row_to_suite(r) for r in _leetcode_rows()]
    assert sum(r.needs_node_conversion for r in real) == sum(
        bool(re.search(r"\b(ListNode|TreeNode)\b", r["starter_code"])) for r in _leetcode_rows()
    )


def test_safe_literals():
    assert parse_literal("-inf") == float("-inf")
    assert parse_literal("[1] * 3 + [2]") == [1, 1, 1, 2]
    assert parse_literal("[[0]] * 2") == [[0], [0]]
    assert parse_literal("10**9 + 7") == 1_000_000_007
    assert parse_literal("(1, (2, 3))") == [1, [2, 3]]
    for bad in ("__import__('os').system('true')", "[i for i in range(3)]", "open('x')", "{1, 2}", "x", "[0] * 10**9", "2 ** 10**6", "b'x'"):
        with pytest.raises(UnsafeLiteral):
            parse_literal(bad)
    with pytest.raises(UnsafeLiteral):
        parse_call_arguments("n = 1), print(1")
    with pytest.raises(UnsafeLiteral):
        parse_call_arguments("**{'a': 1}")


def test_leetcode_malformed():
    starter = "class Solution:\n    def f(self, nums: List[int], k: int) -> int:\n        "
    args = dict(row="some-problem", starter_code=starter)
    msg = invalid(leetcode_to_suite, [{"input": "nums = [i for i in range(3)], k = 1", "output": "3"}], "Solution().f", **args)
    assert "row 'some-problem'" in msg and "input_output[0].input" in msg and "ListComp" in msg
    msg = invalid(leetcode_to_suite, [{"input": "nums = [1], m = 1", "output": "3"}], "Solution().f", **args)
    assert "input_output[0].input" in msg and "do not match the parameters ['nums', 'k']" in msg
    msg = invalid(leetcode_to_suite, [{"input": "nums = [1], k = 1", "output": "three"}], "Solution().f", **args)
    assert "input_output[0].output" in msg and "not a safe literal" in msg
    msg = invalid(leetcode_to_suite, [{"input": "nums = [1], k = 1", "output": "Error: boom"}], "Solution().f", **args)
    assert "zero test cases" in msg
    assert "got dict" in invalid(leetcode_to_suite, {"input": "", "output": ""}, "Solution().f", **args)
    assert "input_output[0]" in invalid(leetcode_to_suite, ["nums = [1]"], "Solution().f", **args)
    assert "input_output[0].output: missing" in invalid(leetcode_to_suite, [{"input": "k = 1"}], "Solution().f", **args)
    assert "entry_point" in invalid(leetcode_to_suite, [], "Solution.f()", **args)
    assert "input_output: missing" in invalid(leetcode_row_to_suite, {"task_id": "t", "entry_point": "f"})


# ================================ CodeScope =====================================================


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_codescope_every_row():
    rows = jsonl(REAL / "codescope_codeopt" / "code_optimization_data.jsonl")
    total = 0
    for row in rows:
        tests = ast.literal_eval(row["testcases"])
        suite = codescope_row_to_suite(row)
        assert suite.origin == "codescope" and len(suite) == len(tests)
        assert [c.expected for c in suite] == [tuple(o.encode() for o in t["output"]) for t in tests]
        total += len(suite)
    assert total == sum(len(ast.literal_eval(r["testcases"])) for r in rows) > 0


def test_codescope_several_answers_and_errors():
    s = codescope_testcases_to_suite("[{'input': '1\\n', 'output': ['YES\\n', 'yes\\n']}]", row="7")
    assert s.cases[0].expected == (b"YES\n", b"yes\n")
    assert "not a Python literal" in invalid(codescope_testcases_to_suite, "[{'input': ", row="7")
    assert "row '7': testcases: zero test cases" in invalid(codescope_testcases_to_suite, "[]", row="7")
    assert "testcases[0].output" in invalid(codescope_testcases_to_suite, [{"input": "1", "output": []}], row="7")
    assert "testcases[0].input: missing" in invalid(codescope_testcases_to_suite, [{"output": ["1"]}], row="7")
    assert "testcases[0]" in invalid(codescope_testcases_to_suite, [("1", "2")], row="7")
    assert "got dict" in invalid(codescope_testcases_to_suite, {"input": "1"}, row="7")
    assert "testcases: missing" in invalid(codescope_row_to_suite, {"id": 1})


# ================================ NeMo-Gym ======================================================


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_nemo_gym_every_row_and_string_encodings():
    rows = jsonl(REAL / "nemo_gym_code_gen" / "example.jsonl")
    for row in rows:
        tests = row["verifier_metadata"]["unit_tests"]
        suite = nemo_gym_row_to_suite(row)
        assert suite.origin == "nemo_gym" and len(suite) == len(tests["inputs"]) == len(tests["outputs"])
        assert [c.expected for c in suite] == [(o.encode(),) for o in tests["outputs"]]
        # the same data stored as a Python-literal string or a JSON string, at either level
        assert nemo_gym_unit_tests_to_suite(repr(tests), row=row["hash_id"]) == suite
        assert nemo_gym_unit_tests_to_suite(json.dumps(tests), row=row["hash_id"]) == suite
        as_string = dict(row, verifier_metadata=repr(row["verifier_metadata"]))
        assert nemo_gym_row_to_suite(as_string) == suite
    c692 = next(r for r in rows if r["hash_id"] == "c69268d8bdb4da0685d7b187c88296c1")
    assert nemo_gym_row_to_suite(c692).cases[0].expected == (b"1\n3 \n-1\n0\n\n2\n1 2 \n",)


def test_nemo_gym_malformed():
    h = "c69268d8bdb4da0685d7b187c88296c1"
    msg = invalid(nemo_gym_unit_tests_to_suite, {"inputs": ["1"], "outputs": []}, row=h)
    assert f"row '{h}'" in msg and "unit_tests" in msg and "1 inputs but 0 outputs" in msg
    assert "zero test cases" in invalid(nemo_gym_unit_tests_to_suite, {"inputs": [], "outputs": []}, row=h)
    assert "neither JSON nor a Python literal" in invalid(nemo_gym_unit_tests_to_suite, "{'inputs': [", row=h)
    assert "unit_tests.outputs[0]" in invalid(nemo_gym_unit_tests_to_suite, {"inputs": ["1"], "outputs": [1]}, row=h)
    assert "unit_tests.fn_name" in invalid(nemo_gym_unit_tests_to_suite, {"fn_name": "f", "inputs": [[1]], "outputs": [1]}, row=h)
    assert "got list" in invalid(nemo_gym_unit_tests_to_suite, [["1", "2"]], row=h)
    assert "verifier_metadata" in invalid(nemo_gym_row_to_suite, {"hash_id": h, "verifier_metadata": {"tests": {}}})


# ================================ LiveCodeBench =================================================

LCB_STDIN = [{"input": "3\n12345 530391 12345\n", "output": "2\n", "testtype": "stdin"}]
LCB_FUNCTIONAL = [
    {"input": "[0, 1, 2, 3, 4]\n2", "output": "3", "testtype": "functional"},
    {"input": "[5, 1, 4, 2, 2]\n6", "output": "0", "testtype": "functional"},
]


def lcb_compress(value) -> str:
    """LiveCodeBench's own encoding of private tests."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(value)))).decode()


def test_lcb_stdin_public_and_compressed_private():
    private = [{"input": f"{n}\n" + " ".join(["7"] * n) + "\n", "output": "1\n", "testtype": "stdin"} for n in (1, 2, 3)]
    row = {
        "question_id": "abc999_a",
        "public_test_cases": json.dumps(LCB_STDIN),
        "private_test_cases": lcb_compress(private),
        "metadata": "{}",
    }
    suite = livecodebench_row_to_suite(row)
    assert suite.origin == "livecodebench:stdin"
    assert [c.name for c in suite] == ["public.0", "private.0", "private.1", "private.2"]
    assert suite.cases[3] == StdioCase("private.2", b"3\n7 7 7\n", (b"1\n",))
    plain = livecodebench_to_suite(json.dumps(LCB_STDIN), json.dumps(private), "{}", row="abc999_a")
    assert plain == suite


def test_lcb_functional():
    suite = livecodebench_to_suite(
        json.dumps(LCB_FUNCTIONAL[:1]),
        lcb_compress(LCB_FUNCTIONAL[1:]),
        json.dumps({"func_name": "numberOfEmployeesWhoMetTarget"}),
        row="2876",
    )
    assert suite.origin == "livecodebench:functional"
    assert suite.cases == (
        CallCase("public.0", "numberOfEmployeesWhoMetTarget", ([0, 1, 2, 3, 4], 2), expected=(3,)),
        CallCase("private.0", "numberOfEmployeesWhoMetTarget", ([5, 1, 4, 2, 2], 6), expected=(0,)),
    )


class _Exploit:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_lcb_private_pickle_never_runs_code(tmp_path):
    target = str(tmp_path / "pwned")
    for payload in (_Exploit(target), [_Exploit(target)], {"tests": _Exploit(target)}):
        evil = base64.b64encode(zlib.compress(pickle.dumps(payload))).decode()
        msg = invalid(decode_lcb_private_tests, evil, row="lcb_evil")
        assert "row 'lcb_evil': private_test_cases" in msg and "is not allowed" in msg
        for protocol in range(0, pickle.HIGHEST_PROTOCOL + 1):
            with pytest.raises(UnsafePickle):
                decode_lcb_compressed(base64.b64encode(zlib.compress(pickle.dumps(payload, protocol=protocol))))
    assert not os.path.exists(target)


def test_lcb_private_decoding_limits_and_garbage():
    bomb = base64.b64encode(zlib.compress(pickle.dumps("[" + " " * 5_000_000 + "]"))).decode()
    with pytest.raises(UnsafePickle, match="inflates to more than"):
        decode_lcb_compressed(bomb, max_bytes=1_000_000)
    assert decode_lcb_private_tests(bomb, row="x") == []
    assert "not base64" in invalid(decode_lcb_private_tests, "@@@ not base64 @@@", row="x")
    assert "not zlib" in invalid(decode_lcb_private_tests, base64.b64encode(b"plain bytes").decode(), row="x")
    raw_list = base64.b64encode(zlib.compress(pickle.dumps(LCB_STDIN))).decode()  # a pickled list, not a str
    assert decode_lcb_private_tests(raw_list, row="x") == LCB_STDIN
    assert decode_lcb_private_tests(None, row="x") == [] == decode_lcb_private_tests("", row="x")
    assert "got dict" in invalid(decode_lcb_private_tests, lcb_compress({"input": "1"}), row="x")


def test_lcb_malformed():
    row = "abc999_b"
    assert "zero test cases" in invalid(livecodebench_to_suite, "[]", "", "{}", row=row)
    msg = invalid(livecodebench_to_suite, "[{\"input\": \"1\", ", None, None, row=row)
    assert f"row '{row}': public_test_cases: not valid JSON" in msg
    bad_type = [{"input": "1", "output": "1", "testtype": "interactive"}]
    assert "public_test_cases[0].testtype: unknown test type 'interactive'" in invalid(
        livecodebench_to_suite, json.dumps(bad_type), row=row
    )
    assert "mixed test types" in invalid(livecodebench_to_suite, json.dumps(LCB_STDIN + LCB_FUNCTIONAL), row=row)
    assert "metadata.func_name" in invalid(livecodebench_to_suite, json.dumps(LCB_FUNCTIONAL), None, "{}", row=row)
    meta = json.dumps({"func_name": "f"})
    bad_arg = [{"input": "[1, 2\n3", "output": "1", "testtype": "functional"}]
    assert "public_test_cases[0].input" in invalid(livecodebench_to_suite, json.dumps(bad_arg), None, meta, row=row)
    bad_out = [{"input": "1", "output": "not json", "testtype": "functional"}]
    assert "public_test_cases[0].output" in invalid(livecodebench_to_suite, json.dumps(bad_out), None, meta, row=row)
    assert "public_test_cases[0]" in invalid(livecodebench_to_suite, '["1"]', row=row)
    missing = [{"input": "1", "testtype": "stdin"}]
    assert "public_test_cases[0].output: missing" in invalid(livecodebench_to_suite, json.dumps(missing), row=row)
    assert "metadata: expected an object" in invalid(livecodebench_to_suite, json.dumps(LCB_STDIN), None, "[1]", row=row)
    assert "public_test_cases: expected a list" in invalid(livecodebench_to_suite, '{"a": 1}', row=row)


# --- long integers and deep nesting in test data (S1, S2) ---------------------------------------

def _digits(n: int) -> str:
    import decimal

    return str(decimal.Decimal(n))  # no int/str digit limit involved


def test_json_ground_truth_with_integers_beyond_4300_digits(default_int_limit):
    from arbiter.judge.encodings import verl_ground_truth_to_suite

    big = 3**20000  # 9543 digits
    text = ('[{"type": "function_call", "fn_name": "f", "input": [%s, "%s"], "output": [[-%s, 1.5]]}]'
            % (_digits(big), _digits(big), _digits(big)))
    case = verl_ground_truth_to_suite(text, row="r1").cases[0]
    assert case.args == (big, _digits(big)) and case.expected == ([-big, 1.5],)
    # newline-separated JSON arguments (TACO / LiveCodeBench) take the same decoder
    apps = apps_input_output_to_suite(json.dumps({"fn_name": "f", "inputs": ["1\n2"], "outputs": [[3]]}), row="a")
    assert apps.cases[0].args == (1, 2)
    lcb_input = f"{_digits(big)}\n[{_digits(big)}]"
    suite = livecodebench_to_suite(json.dumps([{"input": lcb_input, "output": _digits(big), "testtype": "functional"}]),
                                   metadata=json.dumps({"func_name": "f"}), row="lcb")
    assert suite.cases[0].args == (big, [big]) and suite.cases[0].expected == (big,)
    # over the 1,000,000-digit cap: a clear error naming the row and field, never a hang
    huge = '[{"type": "function_call", "fn_name": "f", "input": [], "output": [%s]}]' % ("9" * 1_000_001)
    with pytest.raises(InvalidTestSuite, match=r"row 'r2': ground_truth: cannot be decoded .*1000001 digits.*1,000,000-digit cap"):
        verl_ground_truth_to_suite(huge, row="r2")


def test_deeply_nested_ground_truth_is_decoded_or_refused_with_a_row_error():
    from arbiter.judge.encodings import verl_ground_truth_to_suite

    def deep(n: int) -> str:
        return '[{"type": "function_call", "fn_name": "f", "input": [], "output": [%s]}]' % ("[" * n + "]" * n)

    value = verl_ground_truth_to_suite(deep(600), row="r").cases[0].expected[0]
    depth = 0
    while value:
        assert isinstance(value, list) and len(value) == 1
        value, depth = value[0], depth + 1
    assert value == [] and depth == 599
    with pytest.raises(InvalidTestSuite, match=r"row 'r': ground_truth: cannot be decoded \(JSON nested deeper"):
        verl_ground_truth_to_suite(deep(100_000), row="r")


def test_to_plain_is_iterative_and_keeps_conversions():
    from arbiter.judge.encodings._common import to_plain

    class Array:  # numpy-like: converted by duck typing
        def __init__(self, items):
            self.items = items

        def tolist(self):
            return list(self.items)

    class Text(str):
        pass

    value = ({"b": (1, Array([Text("x"), 2.5])), "a": None},)
    for _ in range(20_000):
        value = [value]
    out = to_plain(value)
    for _ in range(20_000):
        assert type(out) is list and len(out) == 1
        out = out[0]
    assert out == [{"b": [1, ["x", 2.5]], "a": None}] and list(out[0]) == ["b", "a"]
    assert type(out[0]["b"][1][0]) is str
    assert to_plain(Array([(1, 2)])) == [[1, 2]] and to_plain("s") == "s"


def test_python_literals_with_integers_beyond_4300_digits(default_int_limit):
    from arbiter.judge.encodings.pyliteral import UnsafeLiteral, parse_call_arguments, parse_literal

    big = 7**6000  # 5071 digits
    text = f"[{_digits(big)}, -{_digits(big)}, '{_digits(big)}', {{{_digits(big)}: 1}}]"
    assert parse_literal(text) == [big, -big, _digits(big), {big: 1}]
    args, kwargs = parse_call_arguments(f"nums = [1, {_digits(big)}], k = 3")
    assert args == [] and kwargs == {"nums": [1, big], "k": 3}
    with pytest.raises(UnsafeLiteral, match="1,000,000-digit cap"):
        parse_literal("1" * 1_000_001)


def test_json_loads_helper_keeps_json_semantics(default_int_limit):
    from arbiter.judge.jsonvalues import IntegerTooLong, JsonTooDeep, loads, rewrite_long_int_literals

    assert loads('{"a": [1, 2.5, null, true, "9"], "n": NaN}')["a"] == [1, 2.5, None, True, "9"]
    assert loads(b"[" + _digits(-(10**5000)).encode() + b"]") == [-(10**5000)]
    with pytest.raises(json.JSONDecodeError):
        loads("[1, 2")
    with pytest.raises(JsonTooDeep):
        loads("[" * 50_000 + "]" * 50_000)
    with pytest.raises(IntegerTooLong):
        loads("1" * 2_000_000)
    source = f"x = '{'1' * 5000}' + {'2' * 5000}"
    rewritten = rewrite_long_int_literals(source)
    assert rewritten.startswith(f"x = '{'1' * 5000}' + 0x")  # the string is left alone
    assert _digits(ast.literal_eval(rewritten.split(" + ")[1])) == "2" * 5000
    assert rewrite_long_int_literals("[1, 2, '3']") == "[1, 2, '3']"


def test_dumps_writes_back_what_loads_reads(default_int_limit):
    from arbiter.judge import jsonvalues

    text = '{"a": [1, ' + "9" * 5000 + ', "x\\u0000y"], "b": -' + "1" * 4400 + "}"
    value = jsonvalues.loads(text)
    assert jsonvalues.loads(jsonvalues.dumps(value)) == value
    assert jsonvalues.dumps(value, ensure_ascii=False).count("9" * 5000) == 1
    assert jsonvalues.dumps({"small": [1, 2]}) == '{"small": [1, 2]}'
