"""Checkers: output comparison and function-call value comparison (pure functions).

Includes the reward-hacking inputs from shared/reference/codegen_harnesses.md (findings A, B, F)
and the two NeMo-Gym rollouts that a line-strict grader scored 0 although their outputs are
token-for-token correct (shared/realdata/SOURCES.md section 6).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import checkers_reference
from arbiter.checkers import pieces
from arbiter.checkers.compare import CheckResult, check_output, compare_values
from arbiter.checkers.spec import CheckerSpec

from conftest import SHARED  # noqa: E402  (ARBITER_SHARED, else the folder beside the repo)
NEMO = SHARED / "realdata" / "nemo_gym_code_gen"

TEXT = ["exact", "trailing_whitespace", "pie", "tokens", "tokens_float"]
WHITESPACE_TOLERANT = ["trailing_whitespace", "pie", "tokens", "tokens_float"]


def check(name: str, output: bytes, *expected: bytes, **options) -> CheckResult:
    return check_output(CheckerSpec(name, **options), output, tuple(expected))


# --- reward-hacking inputs: every checker must reject them ------------------------------------

HACKS = [
    # (description, output, expected)
    ("prints nothing", b"", b"1\n6\n-1\n"),
    ("prints only the first lines", b"1\n6\n", b"1\n6\n-1\n"),
    ("prints extra lines", b"1\n6\n-1\n7\n", b"1\n6\n-1\n"),
    ("swaps lines", b"6\n1\n-1\n", b"1\n6\n-1\n"),
    ("NO for YES (rllm finding A)", b"NO\n", b"YES\n"),
    ("Alice for Bob (rllm finding A)", b"Alice\n", b"Bob\n"),
    ("x for 6 (rllm finding A)", b"x\n", b"6\n"),
    ("big int off by one (np.isclose, finding B)", b"50000000000000000\n", b"50000000000000001\n"),
    ("drops a line, adds one (same count)", b"1\n-1\n-1\n", b"1\n6\n-1\n"),
    ("only whitespace", b" \n\n", b"1\n"),
]


@pytest.mark.parametrize("name", TEXT)
@pytest.mark.parametrize("what,output,expected", HACKS, ids=[h[0] for h in HACKS])
def test_reward_hacks_are_rejected(name, what, output, expected):
    result = check(name, output, expected)
    assert not result.ok, what
    assert result.diff


@pytest.mark.parametrize("name", TEXT)
def test_identical_output_is_accepted(name):
    assert check(name, b"1\n6\n-1\n", b"1\n6\n-1\n").ok


@pytest.mark.parametrize("name", TEXT)
def test_empty_expected_accepts_only_empty_or_blank(name):
    assert check(name, b"", b"").ok
    assert not check(name, b"0\n", b"").ok
    blank = check(name, b" \n\n", b"").ok
    assert blank == (name in WHITESPACE_TOLERANT)


def test_diff_names_missing_lines_and_extra_output():
    for name in ("exact", "trailing_whitespace", "pie"):
        assert "missing lines" in check(name, b"1\n", b"1\n2\n3\n").diff
        assert "extra output" in check(name, b"1\n2\n3\n", b"1\n").diff
    assert "missing tokens" in check("tokens", b"1", b"1 2 3").diff
    assert "extra output" in check("tokens_float", b"1 2 3", b"1").diff
    assert "empty output" in check("tokens", b"", b"1 2").diff


def test_diff_gives_position_expected_and_got():
    r = check("tokens", b"1 2\n3 NO 5\n", b"1 2 3 YES 5")
    assert r.diff == "token 4 (output line 2): expected 'YES', got 'NO'"
    r = check("trailing_whitespace", b"a\nb\nc\n", b"a\nB\nc\n")
    assert r.diff.startswith("line 2: expected 'B', got 'b'")


def test_diff_truncates_long_pieces():
    r = check("exact", b"x" * 10_000, b"y" * 10_000)
    assert not r.ok and len(r.diff) < 250 and "..." in r.diff


# --- exact --------------------------------------------------------------------------------------


def test_exact_is_byte_exact():
    assert not check("exact", b"1\n2", b"1\n2\n").ok
    assert "final newline" in check("exact", b"1\n2", b"1\n2\n").diff
    assert not check("exact", b"1 \n", b"1\n").ok
    r = check("exact", b"1\r\n2\r\n", b"1\n2\n")
    assert not r.ok and "CRLF" in r.diff


# --- trailing_whitespace (oracle seed public_checker) -------------------------------------------


def test_trailing_whitespace_strips_line_ends_and_the_end():
    assert check("trailing_whitespace", b"1 \n2\n", b"1\n2").ok
    assert check("trailing_whitespace", b"12", b"12\n").ok
    assert check("trailing_whitespace", b"9 7 -1 \n\n\n", b"9 7 -1\n").ok
    assert check("trailing_whitespace", b"1\r\n2\r\n", b"1\n2\n").ok  # CRLF
    assert check("trailing_whitespace", b"a\t\nb\x0c\n", b"a\nb\n").ok


def test_trailing_whitespace_keeps_inner_blank_lines_and_leading_space():
    assert not check("trailing_whitespace", b"1\n\n2\n", b"1\n2\n").ok
    assert not check("trailing_whitespace", b"1\n2\n", b"1\n\n2\n").ok
    assert not check("trailing_whitespace", b" 1\n", b"1\n").ok
    assert not check("trailing_whitespace", b"\n1\n", b"1\n").ok
    assert not check("trailing_whitespace", b"1 2\n", b"1  2\n").ok


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_trailing_whitespace_on_the_seed_rows():
    rows = [json.loads(line) for line in (SHARED / "seed/data/oracle_seed.jsonl").read_text().splitlines()]
    assert {json.dumps(r["public_checker"], sort_keys=True) for r in rows} == {
        '{"strip_trailing_whitespace": true, "type": "exact_stdout"}'
    }
    for r in rows:
        want = r["visible_tests"][0]["stdout"].encode()
        assert check("trailing_whitespace", want.rstrip(b"\n"), want).ok
        assert check("trailing_whitespace", want.replace(b"\n", b" \r\n"), want).ok
        assert not check("trailing_whitespace", b"", want).ok
        assert not check("trailing_whitespace", b"\n" + want, want).ok


# --- pie --------------------------------------------------------------------------------------


def test_pie_float_lines_within_1e_3():
    assert check("pie", b"0.3333\n", b"0.333333333\n").ok
    assert check("pie", b"1.0005\n", b"1\n").ok
    assert not check("pie", b"1.002\n", b"1\n").ok
    assert check("pie", b"  2.50000  \r\n", b"2.5").ok


def test_pie_requires_equal_line_counts_unlike_pie_zip():
    # pie-perf's zip scores a prefix as fully correct; we do not (reference finding F).
    assert not check("pie", b"1\n", b"1\n2\n").ok
    assert not check("pie", b"1\n2\n3\n", b"1\n2\n").ok


def test_pie_lines_with_several_numbers_compare_as_strings():
    assert not check("pie", b"1.0 2.0\n", b"1.0 2.0001\n").ok
    assert check("pie", b"1.0 2.0\n", b"1.0 2.0\n").ok


def test_pie_plain_integers_are_exact():
    assert not check("pie", b"9007199254740993\n", b"9007199254740992\n").ok
    assert check("pie", b"007\n", b"7\n").ok  # same integer, as PIE's float() comparison


def test_pie_does_not_parse_nan_or_underscores():
    assert not check("pie", b"nan\n", b"nan0\n").ok
    assert check("pie", b"nan\n", b"nan\n").ok
    assert not check("pie", b"1_000\n", b"1000\n").ok


# --- tokens -----------------------------------------------------------------------------------


def test_tokens_ignores_layout_not_order():
    assert check("tokens", b"1 2\n3\n", b"1\n2 3\n").ok
    assert check("tokens", b"1\n\n\n2", b"1 2\n").ok
    assert check("tokens", b"1\r\n2\r\n", b"1\n2\n").ok
    assert not check("tokens", b"2 1", b"1 2").ok
    assert not check("tokens", b"1.0", b"1").ok  # exact tokens: no numeric equivalence


# --- tokens_float -----------------------------------------------------------------------------


def test_tokens_float_tolerance():
    assert check("tokens_float", b"0.3333333", b"0.333333333").ok  # abs
    assert check("tokens_float", b"1000000.5", b"1000000.0").ok  # rel 1e-6 of 1e6 = 1
    assert not check("tokens_float", b"0.333", b"0.333333333").ok
    assert check("tokens_float", b"5", b"5.000000").ok
    assert check("tokens_float", b"5.0000001", b"5.0").ok  # the expected token has a fraction: tolerance
    assert check("tokens_float", b"1e3", b"1000.0").ok
    assert check("tokens_float", b"0.1", b"0.2", abs_tol=0.2).ok
    assert not check("tokens_float", b"0.1", b"0.2", abs_tol=0.01, rel_tol=0.01).ok


def test_tokens_float_relative_to_expected_not_to_the_answer():
    # |got - want| = 1e6; rel 0.5 of want (1e6) is 5e5: reject, even though 0.5 * got = 1e6.
    assert not check("tokens_float", b"2000000.0", b"1000000.0", abs_tol=0, rel_tol=0.5).ok


def test_tokens_float_plain_integers_are_exact():
    assert not check("tokens_float", b"50000000000000000", b"50000000000000001").ok
    assert not check("tokens_float", b"1000001", b"1000000").ok  # rel 1e-6 would accept
    big = b"1" + b"0" * 5000
    assert check("tokens_float", big, big).ok
    assert not check("tokens_float", big + b"1", big + b"2").ok
    assert check("tokens_float", b"-0", b"0").ok


@pytest.mark.parametrize(
    "got,want,ok",
    [
        # an expected plain integer takes its value in any number's spelling, exactly, and a number
        # written as a float within tolerance that rounds to it (docs/checkers.md), never another integer
        (b"6.0000001", b"6", True),
        (b"5.9999999", b"6", True),  # as for an expected 6.0
        (b"239.99999999999997", b"240", True),  # 240 - 1 ulp (AOJ p02252)
        (b"6.000000000000000000000000001", b"6", True),
        (b"6.00001", b"6", False),  # beyond 1e-6
        (b"6", b"7", False),
        (b"1000000.5", b"1000000", False),  # rel 1e-6 of 1e6 would accept; it does not round to 1000000
        (b"10000001.0", b"10000000", False),  # another integer, rel 1e-7
        (b"10000000.4", b"10000000", True),
        (b"9007199254740992.0", b"9007199254740993", False),  # beyond 2**53: exact value only
        (b"9007199254740993.0", b"9007199254740993", True),
        (b"1.999999999e+18", b"1999999999000000001", False),  # a double's n * (n - 1) / 2
        (b"6", b"6", True),
        (b"6.0", b"6", True),
        (b"06", b"6", True),
        (b"6.", b"6", True),
        (b"+6.000", b"6", True),
        (b"6e0", b"6", True),
        (b"1e6", b"1000000", True),
        (b"-0.0", b"0", True),
        (b"-6.0", b"6", False),
        (b"1e500", b"1" + b"0" * 500, True),  # exact decimal value: no overflow involved
        (b"1e500", b"1" + b"0" * 499, False),
        (b"1e-999999999999999999999", b"0", True),  # beyond Decimal's exponent range; within 1e-6 of 0
        (b"1e-999999999999999999999", b"1", False),
        (b"six", b"6", False),
        # an expected token with a fraction or an exponent keeps the tolerance
        (b"6.0000001", b"6.0", True),
        (b"6.0000001", b"6e+00", True),
        (b"6", b"6e0", False),  # digits, e, digits: a hex string (docs/checkers.md), only the same bytes
        (b"6", b"6.0000001", True),
    ],
)
def test_tokens_float_expected_integer_takes_its_value_or_a_float_near_it(got, want, ok):
    assert check("tokens_float", got, want).ok is ok


@pytest.mark.parametrize(
    "got,want,ok",
    [
        (b"nan", b"nan", True),  # not a number: compared as strings
        (b"nan", b"NaN", False),
        (b"inf", b"1e500", False),  # 1e500 overflows: not finite, compared as a string
        (b"1e500", b"1e500", True),
        (b"1e500", b"1.0e500", False),
        (b"0x10", b"16", False),
        (b"0x10", b"16.0", False),
        (b"1_000", b"1000.0", False),
        (b"1,5", b"1.5", False),
        (b".5", b"0.5", True),
        (b"5.", b"5", True),
        (b"+2.0", b"2", True),
    ],
)
def test_tokens_float_number_grammar(got, want, ok):
    assert check("tokens_float", got, want).ok is ok


# --- options ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TEXT)
def test_case_insensitive_applies_to_every_checker(name):
    assert not check(name, b"yes\n", b"YES\n").ok
    assert check(name, b"yes\n", b"YES\n", case_insensitive=True).ok
    assert not check(name, b"no\n", b"YES\n", case_insensitive=True).ok


def test_case_insensitive_non_ascii():
    assert check("tokens", "ÉTÉ\n".encode(), "été\n".encode(), case_insensitive=True).ok
    assert not check("tokens", "STRASSE".encode(), "straße".encode(), case_insensitive=True).ok


@pytest.mark.parametrize("name", TEXT)
def test_any_accepted_answer_matches(name):
    assert check(name, b"2 1\n", b"1 2\n", b"2 1\n").ok
    r = check(name, b"3 3\n", b"1 2\n", b"2 1\n")
    assert not r.ok and "none of 2 accepted answers matched" in r.diff


@pytest.mark.parametrize("name", TEXT)
def test_invalid_utf8_is_compared_not_decoded(name):
    assert check(name, b"\xff\xfe 1\n", b"\xff\xfe 1\n").ok
    r = check(name, b"\xff\xfe 1\n", b"\xff\xfd 1\n")
    assert not r.ok and "\\xff" in r.diff
    assert check(name, b"\xff\xfe 1\n", b"\xff\xfe 1\n", case_insensitive=True).ok


def test_external_checker_is_not_a_pure_comparison():
    with pytest.raises(ValueError):
        check_output(CheckerSpec("external", program="int main(){}"), b"", (b"",))
    with pytest.raises(ValueError):
        check_output(CheckerSpec("tokens"), b"", ())


@pytest.mark.parametrize("name", TEXT)
def test_big_output_difference_is_located(name):
    n = 400_000
    want = b"".join(b"%d.5\n" % i for i in range(n))
    assert check(name, want, want).ok
    got = want[: -len(b"%d.5\n" % (n - 1))] + b"%d.5\n" % n  # last number off by one
    r = check(name, got, want)
    assert not r.ok
    assert str(n) in r.diff  # the last line / token


# --- the NeMo-Gym rollouts (real program outputs recorded by the Gym grader) -------------------


def _nemo_rows():
    rows = {}
    for line in (NEMO / "example.jsonl").read_text().splitlines():
        row = json.loads(line)
        rows[row["hash_id"]] = row["verifier_metadata"]["unit_tests"]
    rollouts = [json.loads(line) for line in (NEMO / "example_rollouts.jsonl").read_text().splitlines()]
    return rows, rollouts


def _recorded(row_id: str):
    """(program output, expected output, rollout) of the failing case Gym recorded for ``row_id``:
    the rollout whose ``metadata.inputs`` is one of the row's test inputs."""
    rows, rollouts = _nemo_rows()
    tests = rows[row_id]
    for rollout in rollouts:
        meta = rollout["metadata"]
        if "output" in meta and meta["inputs"] in tests["inputs"]:
            i = tests["inputs"].index(meta["inputs"])
            assert meta["expected"] == tests["outputs"][i]
            return meta["output"].encode(), tests["outputs"][i].encode(), rollout
    raise AssertionError(f"no recorded output for {row_id}")


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
@pytest.mark.parametrize("row_id", ["c69268d8bdb4da0685d7b187c88296c1", "ff86821ed6f7260c7a17c4c9be03b663"])
def test_nemo_gym_false_negatives_pass_under_tokens(row_id):
    output, expected, rollout = _recorded(row_id)
    assert rollout["reward"] == 0.0  # Gym's line-based grader rejected it
    assert check("tokens", output, expected).ok
    # a line-strict checker repeats Gym's false negative
    assert not check("trailing_whitespace", output, expected).ok
    assert not check("pie", output, expected).ok


@pytest.mark.usefixtures("shared")  # skipped without the shared folder
def test_nemo_gym_real_wrong_answers_fail_under_tokens():
    rows, rollouts = _nemo_rows()
    failures = []
    for rollout in rollouts:
        meta = rollout["metadata"]
        if "output" not in meta:
            continue
        expected = meta["expected"].encode()
        got = meta["output"].encode()
        failures.append((got, expected, check("tokens", got, expected).ok))
    verdicts = [ok for _, _, ok in failures]
    # four recorded failures: two false negatives of the line grader, two real wrong answers
    assert len(failures) == 4 and verdicts.count(True) == 2
    wrong = [(g, e) for g, e, ok in failures if not ok]
    assert (b"", b"101011\n11111\n1001\n") in wrong  # printed nothing
    assert (b"-1\n-1\n-1\n", b"1\n6\n-1\n") in wrong  # wrong numbers


# --- compare_values -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "actual,expected,ok",
    [
        (True, True, True),
        (True, 1, False),  # LeetCode prints true, not 1
        (1, True, False),
        (0, False, False),
        ([True, False], [1, 0], False),
        (None, None, True),
        (None, 0, False),
        ([], None, False),
        ("", None, False),
        (10**30, 10**30, True),
        (10**30 + 1, 10**30, False),
        (50000000000000001, 50000000000000000, False),
        (3, 3.0, True),
        (3.0000001, 3, False),  # an expected integer needs an exact value (tolerance is for floats)
        (2.5, 2, False),
        (0.1 + 0.2, 0.3, True),
        (1.5, 1.4, False),
        (float("nan"), float("nan"), True),
        (float("inf"), float("inf"), True),
        (float("-inf"), float("inf"), False),
        (1e308, float("inf"), False),
        (10**400, 1.0, False),
        ("abc", "abc", True),
        ("abc", "ABC", False),
        ("1", 1, False),
        ([1, 2, 3], [1, 2, 3], True),
        ([1, 2, 3], [1, 3, 2], False),
        ([1, 2], [1, 2, 3], False),
        ([1, 2, 3], [1, 2], False),
        ([[1, [2, 3.0]]], [[1, [2, 3]]], True),
        ((1, 2), [1, 2], True),
        ({"a": 1, "b": [1.0]}, {"b": [1], "a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": 1, "c": 2}, {"a": 1, "b": 2}, False),
        ({"1": 2}, {1: 2}, True),  # a decoded JSON object vs a Python-literal dict
        ([9], 9, False),
        (9, [9], False),
    ],
)
def test_compare_values_rules(actual, expected, ok):
    result = compare_values(actual, expected)
    assert result.ok is ok
    assert bool(result.diff) is not ok


@pytest.mark.parametrize(
    "actual,expected,ok",
    [
        (True, 1, True),  # APPS/TACO/prime_code compare with Python ==: True == 1
        (1, True, True),
        (False, 0, True),
        (0, False, True),
        ([True, False], [1, 0], True),
        ({"a": True}, {"a": 1}, True),
        (True, 1.0, True),
        (True, 0, False),
        (2, True, False),
        (False, None, False),
        (True, "1", False),
        (True, True, True),
    ],
)
def test_compare_values_lenient_bool(actual, expected, ok):
    assert compare_values(actual, expected, strict_bool=False).ok is ok


def test_strict_bool_is_a_checker_option():
    assert CheckerSpec("tokens").strict_bool is True
    assert CheckerSpec("tokens_float", strict_bool=False).strict_bool is False


def test_compare_values_diff_paths():
    assert compare_values([1, [2, 3]], [1, [2, 4]]).diff == "at $[1][1]: expected 4 (int), got 3 (int)"
    assert compare_values({"k": [True]}, {"k": [1]}).diff == "at $['k'][0]: expected 1 (int), got True (bool)"
    assert "missing items" in compare_values([1], [1, 2]).diff
    assert "extra output" in compare_values([1, 2], [1]).diff
    assert "missing keys" in compare_values({}, {"a": 1}).diff
    assert "unexpected keys" in compare_values({"a": 1, "b": 2}, {"a": 1}).diff


def test_compare_values_tolerances_are_options():
    assert not compare_values(1.1, 1.0).ok
    assert compare_values(1.1, 1.0, abs_tol=0.2).ok
    assert compare_values(110.0, 100.0, abs_tol=0, rel_tol=0.1).ok
    assert not compare_values(111.0, 100.0, abs_tol=0, rel_tol=0.1).ok


def test_compare_values_large_and_deep():
    big = list(range(200_000))
    assert compare_values(list(big), big).ok
    other = list(big)
    other[-1] = -1
    assert compare_values(other, big).diff.startswith("at $[199999]:")
    deep_a: list = []
    deep_e: list = []
    a, e = deep_a, deep_e
    for _ in range(5000):
        a.append([])
        e.append([])
        a, e = a[0], e[0]
    a.append(1)
    e.append(2)
    assert not compare_values(deep_a, deep_e).ok  # no RecursionError
    assert math.isfinite(len(compare_values(deep_a, deep_e).diff))


def test_values_expected_integer_needs_an_exact_value():
    from arbiter.checkers.values import compare_values

    assert compare_values(3.0, 3).ok
    assert not compare_values(3.0000001, 3).ok
    assert compare_values([1, 2.0], [1, 2]).ok
    assert compare_values(0.30000000000000004, 0.3).ok  # a float expected value keeps its tolerance
    assert not compare_values(float("inf"), 3).ok


# --- integers beyond the 4300-digit limit, deep values (S1, S2) ---------------------------------

def _digits(n: int) -> str:
    import decimal

    return str(decimal.Decimal(n))  # no int/str digit limit involved


def test_function_values_with_huge_integers_compare_exactly_and_diff_without_raising(default_int_limit):
    big = 2**30000  # 9031 digits
    assert compare_values([big, {"k": -big}], [big, {"k": -big}]).ok
    r = compare_values([big, {"k": -big}], [big, {"k": -big - 1}])
    assert not r.ok and r.diff.startswith("at $[1]['k']: expected -")
    assert r.diff.count("(9031 digits)") == 2 and _digits(big + 1)[-8:] in r.diff
    assert not compare_values(big, float("inf")).ok and not compare_values(1e300, big).ok
    # a dict key from a Python literal matches the JSON text of the same integer
    assert compare_values({_digits(big): 1}, {big: 1}).ok
    assert not compare_values({_digits(big + 1): 1}, {big: 1}).ok


def test_value_diffs_of_deep_containers_never_raise():
    from arbiter.checkers.diff import show_value

    deep: list = [5]
    for _ in range(100_000):
        deep = [deep]
    shown = show_value(deep)
    assert shown.startswith("[[[[") and shown.endswith("(list)") and "..." in shown
    assert show_value([1, 2**20000]).startswith("[1, ")  # a long int inside a container
    r = compare_values(deep, [1])
    assert not r.ok and r.diff.startswith("at $[0]: expected 1 (int), got [[[")


def test_bigint_helpers_round_trip_under_the_default_limit(default_int_limit):
    from arbiter.checkers.bigint import IntegerTooLong, decimal_digits, int_from_decimal, int_to_decimal, show_int

    for n in (0, 9, 10, 10**4299, 10**4300 - 1, 10**4300, 7**20000, -(3**15000)):
        text = _digits(n)
        assert int_to_decimal(n) == text and int_from_decimal(text) == n
        assert decimal_digits(n) == len(text.lstrip("-"))
    assert int_from_decimal("+" + "0" * 5000 + "12") == 12 and int_from_decimal(b"-42") == -42
    assert show_int(123) == "123" and show_int(-(10**10)) == "-10000000000"
    with pytest.raises(IntegerTooLong, match="1000001 digits"):
        int_from_decimal("1" * 1_000_001)
    with pytest.raises(ValueError):
        int_from_decimal("12" * 3000 + "x")


def test_text_checkers_compare_huge_integer_tokens_as_digits(default_int_limit):
    big = _digits(5**40000).encode()  # 27959 digits
    other = _digits(5**40000 + 10**27000).encode()
    for name in TEXT:
        assert check(name, big + b"\n", big + b"\n").ok, name
        assert not check(name, other + b"\n", big + b"\n").ok, name
    assert check("tokens_float", b"+00" + big + b".0", big).ok  # same value, other spelling
    assert not check("tokens_float", big + b".0000001", big).ok
    assert check("pie", b"-0" + big, b"-" + big).ok and not check("pie", big, b"-" + big).ok
    ten = b"1" + b"0" * 27958  # 10**27958 written out: an exponent spelling is compared in decimal
    assert check("tokens_float", b"1e27958", ten).ok and not check("tokens_float", b"1e27957", ten).ok


# --- judge-side memory: the checkers never hold a list of all tokens or lines (issue 19, item 3) --

FUZZ = settings(max_examples=int(os.environ.get("ARBITER_FUZZ_EXAMPLES", "1500")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

#: Pieces that make the checkers' rules bite: every ASCII whitespace byte, CR LF, blank lines,
#: numbers in several spellings (plain, leading zeros, decimals, exponents, within 1e-3 and
#: within 1e-6), not-numbers (nan, 0x10, 1_000), a byte bytes.split() keeps (0x1c), invalid UTF-8.
_PIECES = [b" ", b"\t", b"\n", b"\r", b"\r\n", b"\x0b", b"\x0c", b"\n\n", b"  ", b"\x1c", b"\xff",
           b"a", b"A", b"x", b"1", b"6", b"06", b"6.0", b"6e0", b"-0", b"0", b"1.5", b"1.5000001",
           b"1.5004", b"2.0", b"1e3", b"1000", b"1000.0000001", b"nan", b"0x10", b"1_000", b"-", b"."]
_texts = st.lists(st.sampled_from(_PIECES), max_size=16).map(b"".join)


@st.composite
def _pairs(draw):
    """(output, expected): unrelated texts, or an expected text and a few edits of it."""
    want = draw(_texts)
    if draw(st.booleans()):
        return draw(_texts), want
    got = bytearray(want)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(got)))
        got[at:at + draw(st.integers(0, 2))] = draw(st.sampled_from(_PIECES + [b""]))
    return (bytes(got), want) if draw(st.booleans()) else (want, bytes(got))


@contextlib.contextmanager
def _blocks_of(size: int):
    """Split texts ``size`` bytes at a time, so that short texts have block boundaries everywhere."""
    saved, pieces.BLOCK_BYTES = pieces.BLOCK_BYTES, size
    try:
        yield
    finally:
        pieces.BLOCK_BYTES = saved


@pytest.mark.parametrize("name", TEXT)
@FUZZ
@given(pair=_pairs(), size=st.integers(1, 9))
def test_streaming_checkers_give_the_reference_verdict_and_diff(name, pair, size):
    """Each checker gives exactly the verdict and diff of the simple list-based implementation
    it had before (``tests/checkers_reference.py``), whatever the block boundaries."""
    got, want = pair
    with _blocks_of(size):
        assert check(name, got, want) == checkers_reference.TEXT_CHECKERS[name](got, want), (got, want)


@pytest.mark.parametrize("name", TEXT)
@FUZZ
@given(pair=_pairs(), size=st.integers(1, 9))
def test_streaming_checkers_match_the_reference_on_long_pieces(name, pair, size):
    """The same with tokens and lines longer than a block (each is then a block of its own)."""
    got, want = (text.replace(b"x", b"x" * 40).replace(b"  ", b" " * 30) for text in pair)
    with _blocks_of(size):
        assert check(name, got, want) == checkers_reference.TEXT_CHECKERS[name](got, want), (got, want)


_MIB = 1024 * 1024


def _many_pieces() -> list[tuple[str, str, bytes, bytes, bool]]:
    """(checker, shape, output, expected, accepted) on 4 MiB of 2-digit tokens or lines, each
    compared to its end (a list of all pieces takes about 15 times the text)."""
    n = 4 * _MIB // 3
    ones, spaced, trailing = b"12\n" * n, b"12 " * n, b"12 \n" * n
    shapes = []
    for name in TEXT:
        if name in ("tokens", "tokens_float"):
            shapes += [(name, "same tokens, other layout", spaced, ones, True),
                       (name, "one token extra", ones + b"1\n", ones, False),
                       (name, "one token missing", ones, ones + b"1\n", False)]
        elif name == "exact":
            shapes += [(name, "last line differs", ones + b"2\n", ones + b"3\n", False),
                       (name, "one line extra", ones + b"1\n", ones, False)]
        else:
            shapes += [(name, "trailing spaces", trailing, ones, True),
                       (name, "one line missing", ones, ones + b"1\n", False)]
        shapes.append((name, "one long token", b"x" * (4 * _MIB), b"x" * (4 * _MIB) + b"y", False))
    return shapes


@pytest.mark.parametrize("name,shape,output,expected,ok", _many_pieces(),
                         ids=[f"{s[0]}-{s[1]}" for s in _many_pieces()])
def test_checker_memory_is_bounded_by_the_output_not_its_pieces(name, shape, output, expected, ok):
    """Issue 19 item 3: a checker's allocations (``tracemalloc`` peak, deterministic) on 4 MiB of
    2-digit pieces stay under the output's own size, where the lists of all pieces took 8-30 times it."""
    tracemalloc.start()
    try:
        result = check(name, output, expected)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok is ok, result
    assert peak < len(output), (name, shape, peak)


@FUZZ
@given(piece=st.lists(st.sampled_from([b"a", b"'", b'"', b"\\", b"\n", b"\xff", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80",
                                       b"\xe2\x82", b"\x00"]), max_size=200).map(b"".join),
       limit=st.integers(10, 40))
def test_show_decodes_only_a_prefix_of_a_long_piece_and_shows_the_same(piece, limit):
    """``show`` of a long line or token (a diff of a 64 MiB line) decodes only its start."""
    from arbiter.checkers.diff import show

    text = repr(piece.decode("utf-8", "backslashreplace"))
    assert show(piece, limit) == (text[: limit - 4] + "...'" if len(text) > limit else text)


_FOLD_PIECES = [b"A", b"a", b" ", b"\n", b"\t", "Σ".encode(), "Α".encode(), b"'", b".", b"\xff", b"\xce",
                b"\xe2\x82", "😀".encode(), "İ".encode(), "ß".encode(), b"1"]


@FUZZ
@given(data=st.lists(st.sampled_from(_FOLD_PIECES), max_size=16).map(b"".join), size=st.integers(1, 9))
def test_fold_case_a_block_at_a_time_is_fold_case_of_the_whole(data, size):
    """``case_insensitive`` lower-cases a block of whole tokens at a time; the result is the whole
    text's (final sigma, invalid and cut UTF-8 included)."""
    from arbiter.checkers.normalize import fold_case

    with _blocks_of(size):
        assert fold_case(data) == checkers_reference.fold_case(data)


@pytest.mark.parametrize("name", TEXT)
def test_case_insensitive_memory_on_non_ascii_output(name):
    """One emoji makes a ``str`` of 4 bytes per character: the whole 4 MiB output decoded and
    lower-cased took 20 times its size; a block at a time, the folded copy is the bulk."""
    output = "😀".encode() + b"Ab\n" * (4 * _MIB // 3)
    tracemalloc.start()
    try:
        result = check(name, output, "😀AB\nab\n".encode(), case_insensitive=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not result.ok and result.diff.startswith("extra output: expected 2 "), result
    assert peak < 3 * len(output), (name, peak)
