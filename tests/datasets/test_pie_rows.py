"""Row models and loaders for the PIE gem5 card (spec/pie_gem5_pairs_card.txt) and the PIE C++ release.

Rows are built by hand from the card's field dictionary, JSON-string columns and all. ``make_pairs_raw`` and
``make_bysrc_raw`` are also used by tests/test_pie_speedup.py.

The hand-made pairs row (n_cases_available = 6, cases 0..5), ticks in millions (M = 1_000_000):

    case              0     1     2     3     4     5
    src ticks       400   600   200   800  1000   300      src timed on all; gem5_src_excluded = []
    tgt ticks       100   200   100   400   200     -      tgt could not time case 5: gem5_tgt_excluded = [5]
    fastest ticks    50   100    50   200   100   150
    common_timed = [0, 1, 2, 3, 4]          (timed on both sides)
    kept         = [0, 1, 2, 4, 5]          (case 3 failed by some good program)
    usable       = kept ∩ common = [0, 1, 2, 4]

    our_speedup_usable  = (400+600+200+1000) / (100+200+100+200)      = 2200/600  = 11/3
    our_speedup_all     = (400+600+200+800+1000) / (100+200+100+400+200) = 3000/1000 = 3
    gem5_fastest_sum_ticks_usable = 50+100+50+100 = 300M;  our_fastest_speedup = 2200/300 = 22/3
    ceiling_speedup     = (2200M / 4) / 192M = 550/192 = 275/96 ≈ 2.86  -> flag_low_headroom False
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arbiter.datasets.pie.decode import decode_case_ids, decode_ticks
from arbiter.datasets.pie.errors import PieRowError, RowIssues
from arbiter.datasets.pie.read import iter_pie_pairs, iter_rows, load_pie_pairs, load_rows
from arbiter.datasets.pie.rows import (
    TEST_ONLY_COLUMNS,
    TRAIN_VAL_ONLY_COLUMNS,
    PieBysrcRow,
    PiePair,
    PieRow,
    parse_pie_pair,
    parse_row,
)

M = 1_000_000
from conftest import SHARED  # noqa: E402
PURDUE = SHARED / "realdata" / "pie_purdue" / "val.jsonl"

SRC = {0: 400 * M, 1: 600 * M, 2: 200 * M, 3: 800 * M, 4: 1000 * M, 5: 300 * M}
TGT = {0: 100 * M, 1: 200 * M, 2: 100 * M, 3: 400 * M, 4: 200 * M}
FASTEST = {0: 50 * M, 1: 100 * M, 2: 50 * M, 3: 200 * M, 4: 100 * M, 5: 150 * M}


def js(obj) -> str:
    """The card's encoding: JSON with string keys for dicts."""
    if isinstance(obj, dict):
        return json.dumps({str(k): v for k, v in obj.items()})
    return json.dumps(obj)


# Columns by the card's field dictionary. Which columns are [pairs only]:
PAIRS_ONLY = (
    "tgt_id", "tgt_code", "gem5_tgt_per_tc_ticks", "gem5_tgt_excluded", "gem5_tgt_status", "gem5_tgt_sum_ticks_all",
    "common_timed_case_ids", "n_common_timed", "tgt_n_fail", "pair_n_fail", "pie_tgt_agg_runtime",
    "pie_tgt_verdict", "pie_target_reward_updated", "pie_target_reward_updated_pct_bin",
    "pie_tgt_code_accuracy", "pie_tgt_code_compilation", "pie_src_code_runtime", "pie_tgt_code_runtime",
    "pie_fastest_code_accuracy", "pie_fastest_code_compilation", "pie_tgt_code_tc2time",
)


def make_pairs_raw(split: str = "train", **overrides) -> dict:
    """A full pie-gem5-pairs row as stored (JSON strings for the JSON columns); see the module docstring."""
    row = {
        # Identity
        "problem_id": "p02915", "src_id": "s100", "tgt_id": "s200", "split": split, "language": "cpp",
        # Code
        "src_code": "#include <cstdio>\nint main(){int n;scanf(\"%d\",&n);printf(\"%d\\n\",n*n*n);}\n",
        "tgt_code": "#include <cstdio>\nint main(){int n;scanf(\"%d\",&n);printf(\"%d\\n\",n*n*n);return 0;}\n",
        # gem5 timing
        "gem5_src_per_tc_ticks": js(SRC), "gem5_tgt_per_tc_ticks": js(TGT),
        "gem5_fastest_id": "s300", "gem5_fastest_per_tc_ticks": js(FASTEST),
        "gem5_fastest_usable_case_ids": js([0, 1, 2, 4, 5]),
        "gem5_fastest_sum_ticks_usable": 300 * M,            # 50+100+50+100 over usable [0,1,2,4]
        "gem5_src_excluded": js([]), "gem5_tgt_excluded": js([5]),
        "gem5_src_status": "ok", "gem5_tgt_status": "forkloop_partial",
        "gem5_src_sum_ticks_all": 3000 * M,                  # 400+600+200+800+1000 over common [0..4]
        "gem5_tgt_sum_ticks_all": 1000 * M,                  # 100+200+100+400+200
        # Case-id sets + counts
        "common_timed_case_ids": js([0, 1, 2, 3, 4]), "correctness_kept_case_ids": js([0, 1, 2, 4, 5]),
        "usable_case_ids": js([0, 1, 2, 4]),
        "n_common_timed": 5, "n_kept": 5, "n_usable": 4, "n_cases_available": 6,
        "src_n_fail": 0, "tgt_n_fail": 1, "pair_n_fail": 1,
        # Derived
        "our_speedup_usable": 2200 / 600, "our_speedup_all": 3000 / 1000, "our_fastest_speedup": 2200 / 300,
        "ceiling_speedup": 550 / 192,
        "flag_low_headroom": False, "flag_single_case": False, "flag_empty_kept": False,
        # PIE, all splits
        "pie_src_agg_runtime": 0.106, "pie_tgt_agg_runtime": 0.0197, "pie_fastest_agg_runtime": 0.0196,
    }
    if split == "test":
        row.update({
            "pie_n_tests": 3, "pie_test_agg_runtime": 0.05, "pie_test_accuracy": 1.0, "pie_test_compilation": 1.0,
            "pie_src_code_accuracy": 1.0, "pie_tgt_code_accuracy": 1.0,
            "pie_src_code_compilation": 1.0, "pie_tgt_code_compilation": 1.0,
            "pie_src_code_runtime": 0.106, "pie_tgt_code_runtime": 0.0197,
            "pie_fastest_code": "int main(){}", "pie_fastest_code_len": 12, "pie_fastest_code_runtime": 0.0196,
            "pie_fastest_code_accuracy": 1.0, "pie_fastest_code_compilation": 1.0,
            "pie_src_code_tc2time": js({0: 0.04, 1: 0.06}), "pie_tgt_code_tc2time": js({0: 0.01, 1: 0.02}),
            "pie_fastest_code_tc2time": js({0: 0.005, 1: 0.01}), "pie_tests_case_ids": js([0, 1, 4]),
        })
        row.update({c: None for c in TRAIN_VAL_ONLY_COLUMNS})  # "null by design" in test
    else:
        row.update({
            "pie_speedup": 5.39, "pie_src_verdict": "Accepted", "pie_tgt_verdict": "Accepted",
            "pie_fastest_agg_runtime_updated": 0.0196, "pie_src_reward_updated": 0.9989,
            "pie_target_reward_updated": 0.9954, "pie_src_reward_updated_pct_bin": 8,
            "pie_target_reward_updated_pct_bin": 8,
        })
        row.update({c: None for c in TEST_ONLY_COLUMNS})  # "null by design" in train/validation
    row.update(overrides)
    return row


def make_bysrc_raw(split: str = "train", oracle_column: str | None = "gem5_oracle_per_tc_ticks", **overrides) -> dict:
    """A pie-gem5-bysrc row: the pairs row without [pairs only] columns, usable = kept ∩ src-timed = [0,1,2,4,5].

    src over usable = 400+600+200+1000+300 = 2500M. The oracle target (under ``oracle_column``) has the tgt ticks
    plus case 5 = 150M, so its sum over usable is 100+200+100+200+150 = 750M: our_speedup_usable = 2500/750 = 10/3.
    fastest over usable = 50+100+50+100+150 = 450M: our_fastest_speedup = 2500/450 = 50/9.
    ceiling = (2500M / 5) / 192M = 500/192 = 125/48.
    """
    row = {k: v for k, v in make_pairs_raw(split).items() if k not in PAIRS_ONLY}
    row.update({
        "src_id": "s101",
        "usable_case_ids": js([0, 1, 2, 4, 5]), "n_usable": 5,
        "gem5_fastest_sum_ticks_usable": 450 * M,
        "gem5_src_sum_ticks_all": 3300 * M,  # all src-timed cases: 400+600+200+800+1000+300
        "our_speedup_usable": 2500 / 750, "our_speedup_all": 2500 / 750, "our_fastest_speedup": 2500 / 450,
        "ceiling_speedup": 500 / 192,
        "oracle_tgt_code": "int main(){}",
    })
    if oracle_column:
        row[oracle_column] = js({**TGT, 5: 150 * M})
    row.update(overrides)
    return row


# --------------------------------------------------------------------------------------------- decoding


def test_pairs_row_decodes_json_columns_to_python_types():
    row = parse_row(make_pairs_raw(), index=0)
    assert isinstance(row, PieRow) and row.kind == "pairs"
    assert row.gem5_src_per_tc_ticks == SRC and all(type(k) is int for k in row.gem5_src_per_tc_ticks)
    assert row.gem5_tgt_per_tc_ticks == TGT
    assert row.usable_case_ids == [0, 1, 2, 4]
    assert row.correctness_kept_case_ids == [0, 1, 2, 4, 5]
    assert row.gem5_tgt_excluded == [5] and row.gem5_src_excluded == []
    assert row.pie_test_accuracy is None and row.pie_src_code_tc2time is None
    assert row.pie_speedup == 5.39
    assert row.label() == "row 0 (problem_id=p02915, src_id=s100)"


def test_test_split_row_decodes_tc2time_and_tests_ids():
    row = parse_row(make_pairs_raw("test"), index=3)
    assert row.pie_src_code_tc2time == {0: 0.04, 1: 0.06}
    assert row.pie_tests_case_ids == [0, 1, 4]
    assert row.pie_speedup is None and row.pie_tgt_verdict is None


def test_string_and_int_case_keys_decode_identically():
    as_json = parse_row(make_pairs_raw())
    as_int_dict = parse_row(make_pairs_raw(gem5_src_per_tc_ticks=dict(SRC), gem5_tgt_per_tc_ticks=dict(TGT)))
    as_str_dict = parse_row(make_pairs_raw(gem5_src_per_tc_ticks={str(k): v for k, v in SRC.items()}))
    as_list = parse_row(make_pairs_raw(usable_case_ids=[0, 1, 2, 4]))
    assert as_json.gem5_src_per_tc_ticks == as_int_dict.gem5_src_per_tc_ticks == as_str_dict.gem5_src_per_tc_ticks
    assert as_json.gem5_tgt_per_tc_ticks == as_int_dict.gem5_tgt_per_tc_ticks
    assert as_list.usable_case_ids == as_json.usable_case_ids == [0, 1, 2, 4]
    # pyarrow returns map<> columns as a list of (key, value) tuples
    assert decode_ticks([("0", 7), ("3", 9)]) == {0: 7, 3: 9}


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ('{"0": 1, "1": 2', "not valid JSON"),
        ('[1, 2]', "must be a JSON object"),
        ('{"0": 1, "00": 2}', "case id 0 appears twice"),
        ('{"0": 1, "0": 2}', "repeats key '0'"),
        ('{"-1": 5}', "not a non-negative integer"),
        ('{"a": 5}', "not a non-negative integer"),
        ('{"0": 2.5}', "whole number of picoseconds"),
        ('{"0": -3}', "negative"),
        ('{"0": "12"}', "non-negative integer"),
        ('{"0": true}', "non-negative integer"),
    ],
)
def test_bad_ticks_value_names_row_and_column(value, needle):
    raw = make_pairs_raw(gem5_tgt_per_tc_ticks=value)
    with pytest.raises(PieRowError) as ei:
        parse_row(raw, index=7)
    err = ei.value.error
    assert err.columns == ("gem5_tgt_per_tc_ticks",)
    assert (err.index, err.problem_id, err.src_id) == (7, "p02915", "s100")
    assert needle in str(ei.value)
    assert str(ei.value).startswith("row 7 (problem_id=p02915, src_id=s100): column 'gem5_tgt_per_tc_ticks'")


@pytest.mark.parametrize(
    ("value", "needle"),
    [("[0, 1, 1, 2]", "repeats case id(s) [1]"), ("{}", "must be a JSON list"), ("[0, 1.5]", "not a non-negative"),
     ("[0, 1, 2, 9]", "outside 0..5")],
)
def test_bad_case_id_list_is_rejected(value, needle):
    with pytest.raises(PieRowError) as ei:
        parse_row(make_pairs_raw(correctness_kept_case_ids=value, n_kept=4), index=2)
    assert ei.value.error.column == "correctness_kept_case_ids"
    assert needle in str(ei.value)


def test_decode_case_ids_keeps_order_and_rejects_null():
    assert decode_case_ids("[4, 0, 2]") == [4, 0, 2]
    with pytest.raises(ValueError, match="is null"):
        decode_case_ids(None)


def test_count_column_must_match_its_list():
    # card: n_usable = len(usable_case_ids); here 5 != len([0, 1, 2, 4]) = 4
    with pytest.raises(PieRowError) as ei:
        parse_row(make_pairs_raw(n_usable=5), index=0)
    assert ei.value.error.columns == ("n_usable",)
    assert "len(usable_case_ids) is 4" in str(ei.value)


def test_unknown_split_language_and_status_rejected():
    for col, val in (("split", "val"), ("language", "python"), ("gem5_src_status", "startup_fail")):
        with pytest.raises(PieRowError) as ei:
            parse_row(make_pairs_raw(**{col: val}), index=1)
        assert ei.value.error.column == col


# ------------------------------------------------------------------------------------------------ nulls

NEVER_NULL_PAIRS = [
    c for c in make_pairs_raw()
    if c.startswith(("gem5_", "our_", "n_")) or c.endswith("_case_ids") and not c.startswith("pie_")
]


def test_never_null_list_covers_the_card_families():
    # the card: "None of the gem5_* / our_* / *_case_ids / n_* columns are ever null"
    assert "gem5_src_per_tc_ticks" in NEVER_NULL_PAIRS and "our_speedup_usable" in NEVER_NULL_PAIRS
    assert "usable_case_ids" in NEVER_NULL_PAIRS and "n_cases_available" in NEVER_NULL_PAIRS
    # counted on the card: 12 gem5_* + 3 our_* + 3 non-pie *_case_ids (common_timed, correctness_kept, usable)
    # + 4 n_* (n_common_timed, n_kept, n_usable, n_cases_available) = 22
    assert len(NEVER_NULL_PAIRS) == 22


@pytest.mark.parametrize("column", NEVER_NULL_PAIRS)
@pytest.mark.parametrize("split", ["train", "test"])
def test_null_in_never_null_column_is_rejected_with_column_named(column, split):
    with pytest.raises(PieRowError) as ei:
        parse_row(make_pairs_raw(split, **{column: None}), index=11)
    assert ei.value.error.columns == (column,)
    assert "null" in str(ei.value) and "row 11 (problem_id=p02915" in str(ei.value)


@pytest.mark.parametrize("column", ["src_code", "tgt_id", "flag_empty_kept", "ceiling_speedup", "pie_src_agg_runtime"])
def test_other_all_split_columns_are_required_too(column):
    with pytest.raises(PieRowError) as ei:
        parse_row(make_pairs_raw(**{column: None}))
    assert ei.value.error.columns == (column,)


def test_missing_column_is_named():
    raw = make_pairs_raw()
    del raw["usable_case_ids"]
    with pytest.raises(PieRowError) as ei:
        parse_row(raw, index=0)
    assert ei.value.error.columns == ("usable_case_ids",)
    assert "missing" in str(ei.value)


def test_test_row_with_train_val_only_nulls_is_accepted():
    raw = make_pairs_raw("test")
    assert all(raw[c] is None for c in TRAIN_VAL_ONLY_COLUMNS)
    row = parse_row(raw)
    assert row.split == "test" and row.pie_src_reward_updated is None


@pytest.mark.parametrize("split", ["train", "validation"])
def test_train_val_row_with_test_only_nulls_is_accepted(split):
    raw = make_pairs_raw(split)
    assert all(raw[c] is None for c in TEST_ONLY_COLUMNS)
    row = parse_row(raw)
    assert row.split == split and row.pie_tests_case_ids is None


def test_split_specific_columns_may_be_null_in_their_own_split():
    # the card says these columns are null elsewhere; it does not promise them in their own split
    assert parse_row(make_pairs_raw("test", pie_test_accuracy=None)).pie_test_accuracy is None
    assert parse_row(make_pairs_raw("train", pie_speedup=None)).pie_speedup is None


def test_split_specific_column_set_in_the_wrong_split_is_rejected():
    with pytest.raises(PieRowError) as ei:
        parse_row(make_pairs_raw("train", pie_tests_case_ids="[0, 1]"))
    assert ei.value.error.columns == ("pie_tests_case_ids",) and "test-only" in str(ei.value)
    with pytest.raises(PieRowError) as ei:
        parse_row(make_pairs_raw("test", pie_speedup=2.0))
    assert ei.value.error.columns == ("pie_speedup",) and "train/val-only" in str(ei.value)


def test_several_bad_columns_are_all_reported():
    with pytest.raises(PieRowError) as ei:
        parse_row(make_pairs_raw(n_kept=None, usable_case_ids="[0", our_speedup_usable=float("nan")), index=4)
    assert set(ei.value.error.columns) == {"n_kept", "usable_case_ids", "our_speedup_usable"}


# ------------------------------------------------------------------------------------------------ bysrc


def test_bysrc_row_has_no_pairs_only_columns_and_keeps_oracle_extras():
    row = parse_row(make_bysrc_raw(), kind="bysrc", index=0)
    assert isinstance(row, PieBysrcRow) and row.kind == "bysrc"
    assert row.usable_case_ids == [0, 1, 2, 4, 5] and row.n_usable == 5
    assert "tgt_id" not in PieBysrcRow.model_fields and "gem5_tgt_per_tc_ticks" not in PieBysrcRow.model_fields
    assert row.model_extra["oracle_tgt_code"] == "int main(){}"
    # a null [pairs only] column is not required in bysrc; a null common column still is
    with pytest.raises(PieRowError) as ei:
        parse_row(make_bysrc_raw(gem5_fastest_per_tc_ticks=None), kind="bysrc")
    assert ei.value.error.columns == ("gem5_fastest_per_tc_ticks",)


def test_bysrc_raw_fails_as_pairs_naming_the_pairs_only_columns():
    with pytest.raises(PieRowError) as ei:
        parse_row(make_bysrc_raw(), kind="pairs")
    assert "tgt_id" in ei.value.error.columns and "gem5_tgt_per_tc_ticks" in ei.value.error.columns


# ----------------------------------------------------------------------------------------------- loaders

def _three_rows() -> list[dict]:
    """good (train), bad (null usable_case_ids), good (test)."""
    return [
        make_pairs_raw("train"),
        make_pairs_raw("train", src_id="s666", usable_case_ids=None),
        make_pairs_raw("test", src_id="s101"),
    ]


def _check_three(results):
    assert [type(r) for r in results] == [PieRow, RowIssues, PieRow]
    bad = results[1]
    assert (bad.index, bad.src_id, bad.columns) == (1, "s666", ("usable_case_ids",))
    assert results[0].row_index == 0 and results[2].row_index == 2
    assert results[2].split == "test" and results[2].pie_tests_case_ids == [0, 1, 4]
    assert results[0].gem5_src_per_tc_ticks == SRC


def test_parquet_file_loads(tmp_path):
    path = tmp_path / "pairs.parquet"
    pq.write_table(pa.Table.from_pylist(_three_rows()), path)
    _check_three(list(iter_rows(path)))
    _check_three(list(iter_rows(str(path), kind="pairs")))
    assert len(load_rows(path, on_error="skip")) == 2
    with pytest.raises(PieRowError, match="row 1 .*usable_case_ids"):
        load_rows(path)


def test_jsonl_file_loads_including_gzip_and_a_broken_line(tmp_path):
    lines = [json.dumps(r) for r in _three_rows()]
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    _check_three(list(iter_rows(path)))
    gz = tmp_path / "pairs.jsonl.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines[:1] + ['{"problem_id": "p1", "src_id": '] + lines[1:]) + "\n")
    res = list(iter_rows(gz))
    assert [type(r) for r in res] == [PieRow, RowIssues, RowIssues, PieRow]
    assert res[1].index == 1 and "line 2 is not valid JSON" in str(res[1])
    assert res[3].row_index == 3


def test_hf_dataset_and_save_to_disk_dir_load(tmp_path):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list(_three_rows())
    _check_three(list(iter_rows(ds)))
    ds.save_to_disk(str(tmp_path / "ds"))
    _check_three(list(iter_rows(tmp_path / "ds")))
    dd = datasets.DatasetDict({"train": ds, "test": ds.select([2])})
    dd.save_to_disk(str(tmp_path / "dd"))
    assert [r.src_id for r in iter_rows(tmp_path / "dd", split="test")] == ["s101"]
    with pytest.raises(ValueError, match="pass split="):
        list(iter_rows(tmp_path / "dd"))


def test_auto_kind_detects_bysrc_and_in_memory_rows():
    res = list(iter_rows([make_bysrc_raw(), make_bysrc_raw(split="test", src_id="s102")]))
    assert [type(r) for r in res] == [PieBysrcRow, PieBysrcRow]
    assert res[1].pie_src_code_tc2time == {0: 0.04, 1: 0.06}
    assert isinstance(next(iter_rows([make_pairs_raw()])), PieRow)
    assert isinstance(next(iter_rows(pa.Table.from_pylist([make_pairs_raw()]))), PieRow)


def test_not_a_mapping_row_is_a_row_error():
    res = list(iter_rows([make_pairs_raw(), [1, 2, 3]], kind="pairs"))
    assert isinstance(res[1], RowIssues) and res[1].index == 1 and "not a JSON object" in str(res[1])


def test_unusable_source_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        list(iter_rows(tmp_path / "nope.parquet"))
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(ValueError, match="unknown format"):
        list(iter_rows(tmp_path / "x.csv"))


# ------------------------------------------------------------------------------------------------ PiePair


def test_gem5_row_converts_to_pie_pair_with_usable_ids():
    pair = parse_row(make_pairs_raw()).to_pair()
    assert isinstance(pair, PiePair)
    assert (pair.problem_id, pair.src_id, pair.tgt_id) == ("p02915", "s100", "s200")
    assert pair.usable_case_ids == [0, 1, 2, 4]
    assert pair.speedup == pytest.approx(11 / 3)  # our_speedup_usable = 2200/600
    assert parse_pie_pair(make_pairs_raw()) == pair


def test_gem5_row_with_empty_usable_cannot_become_a_pair():
    raw = make_pairs_raw(usable_case_ids="[]", n_usable=0)
    assert parse_row(raw).usable_case_ids == []  # the row itself loads: the card does not rule it out
    with pytest.raises(PieRowError) as ei:
        parse_pie_pair(raw, index=9)
    assert ei.value.error.columns == ("usable_case_ids",) and "row 9" in str(ei.value)


def test_pie_release_row_with_string_values_parses():
    raw = {"src_id": "s1", "tgt_id": "s2", "problem_id": "p00001", "speedup": "2.5", "src_code": "a",
           "tgt_code": "b", "src_agg_runtime": "0.5", "tgt_agg_runtime": "0.2", "src_status": "Accepted"}
    pair = parse_pie_pair(raw)
    assert pair.speedup == 2.5 and pair.src_agg_runtime == 0.5 and pair.usable_case_ids is None
    for col, val in (("speedup", "abc"), ("speedup", "0"), ("speedup", "nan"), ("tgt_code", ""), ("src_id", None)):
        with pytest.raises(PieRowError) as ei:
            parse_pie_pair({**raw, col: val}, index=4)
        assert ei.value.error.columns == (col,)


def test_purdue_val_jsonl_loads_every_row():
    if not PURDUE.exists():
        pytest.skip(f"{PURDUE} not available")
    # independent count: non-blank lines, parsed with the json module only
    with PURDUE.open(encoding="utf-8") as f:
        plain = [json.loads(line) for line in f if line.strip()]
    results = list(iter_pie_pairs(PURDUE))
    errors = [r for r in results if isinstance(r, RowIssues)]
    assert errors == []
    assert len(results) == len(plain)
    assert len(load_pie_pairs(PURDUE)) == len(plain)
    # SOURCES.md: 17 problems in the full upstream file; this folder keeps a subset of the rows
    problems = {r.problem_id for r in results}
    assert problems == {d["problem_id"] for d in plain}
    assert 1 <= len(problems) <= 17
    # SOURCES.md: speedup 1.10 to 19.1, both sides Accepted
    assert all(1.10 <= r.speedup <= 19.2 for r in results)
    assert all(r.usable_case_ids is None and r.src_code.strip() and r.tgt_code.strip() for r in results)
    # PIE's speedup is src_agg_runtime / tgt_agg_runtime
    assert all(math.isclose(r.speedup, r.src_agg_runtime / r.tgt_agg_runtime, rel_tol=1e-5) for r in results)
    assert [(r.src_id, r.tgt_id) for r in results] == [(d["src_id"], d["tgt_id"]) for d in plain]
    # every value as a string (how some exports store them) parses to the same pair
    as_strings = {k: str(v) for k, v in plain[0].items()}
    assert parse_pie_pair(as_strings) == results[0]
