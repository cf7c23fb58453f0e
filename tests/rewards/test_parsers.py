"""Parsers of untrusted text are linear and flat in memory (issue 19, items 2 and 4).

No timed assertions: linearity is shown by construction (no regex with a quantifier runs over a
response), by counting the Python-level calls a parse makes (deterministic), by measuring the
allocations a parse makes (``tracemalloc``, deterministic), and by fuzzing (``hypothesis``) for
equality with the simple reference implementation in ``tests/parsers_reference.py``.
``bench/parse.py`` prints the times. ``ARBITER_FUZZ_EXAMPLES`` (default 1500) sets how many
examples each fuzz test draws.
"""

from __future__ import annotations

import ast
import os
import inspect
import sys
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parsers_reference as ref
from arbiter.pipelines.oracle import format as oracle_format
from arbiter.rewards import extract
from arbiter.rewards.extract import MAX_RESPONSE_CHARS, extract_code, fenced_blocks, strip_reasoning
from arbiter.verl.reward import compute_score

FUZZ = settings(max_examples=int(os.environ.get("ARBITER_FUZZ_EXAMPLES", "1500")), deadline=None,
                suppress_health_check=list(HealthCheck))

# pieces that make fences, closers, inline closes, indentation, CR/LF and think tags likely
PIECES = st.sampled_from([
    "`", "``", "```", "````", "~", "~~~", "~~~~", " ", "  ", "\t", "\n", "\n", "\r", "\r\n",
    "a", "x = 1", "py", "python", "Python3", "cpp", "{.py}", "text", "<think>", "</think>",
    "</THINK>", "x`", " ```", "```python\n", "```\n", "~~~py\n", "print(1)```", "\u212a", "\f",
    "\x0b", "\u00a0", "\u2028", "\r\r", "``` ```", "~~~ ```", "\t```",
    "<|im_end|>", "</s>", "<|endoftext|>", "<pad>", "```<|eot_id|>", "``` ok", "```ok", "<|end",
])
RESPONSES = st.lists(PIECES, max_size=40).map("".join)

_REGEX_META = set(".^$*+?{}[]|()\\")


def _regex_patterns(module) -> list[object]:
    """The pattern argument of every ``re.<function>(...)`` call in ``module``'s source: the
    string when it is a constant, else the ``ast.AST`` of the expression."""
    tree = ast.parse(inspect.getsource(module))
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args
                and node.func.attr != "escape"):
            arg = node.args[0]
            found.append(arg.value if isinstance(arg, ast.Constant) else arg)
    return found


def test_the_response_parser_runs_no_backtracking_regex():
    """By construction: the only regexes of ``arbiter.rewards.extract`` are literal strings (one pass
    of the engine, nothing to backtrack); lines are found with ``str.find``. Before issue 19 a
    per-block pattern ``(?P<code>.*?)[ \\t]*`{3,}[ \\t]*$`` took O(N^2) on N spaces."""
    patterns = _regex_patterns(extract)
    assert patterns, "expected the two <think> tag patterns"
    for p in patterns:
        assert isinstance(p, str), f"a regex built at run time: {ast.unparse(p)}"
        assert not (set(p) & _REGEX_META), f"a regex with metacharacters over the response: {p!r}"


@FUZZ
@given(RESPONSES)
def test_extract_matches_the_reference(text):
    blocks, unclosed = fenced_blocks(strip_reasoning(text))
    assert (blocks, unclosed) == ref.fenced_blocks(ref.strip_reasoning(text))
    assert strip_reasoning(text) == ref.strip_reasoning(text)
    assert extract.strip_end_tokens(text) == ref.strip_end_tokens(text)
    got = extract_code(text)
    code, label, count = ref.extract_code(text)
    assert got.code == code
    assert got.blocks == count
    if got.ok:
        assert got.label == label


@FUZZ
@given(st.lists(st.sampled_from(["```", "~~~", " ", "\t", "\n", "a", "`", "~"]), max_size=30).map("".join),
       st.integers(0, 3), st.sampled_from(["python", "", "cpp"]))
def test_extract_matches_the_reference_inside_a_block(body, indent, label):
    text = " " * indent + "```" + label + "\n" + body
    assert fenced_blocks(text) == ref.fenced_blocks(text)


def _adversarial(shape: str, n: int) -> str:
    """A response of about ``n`` characters of one adversarial shape."""
    if shape == "spaces_then_inline_fence":  # issue 19 item 2's shape
        return "```python\n" + " " * n + "a` ```"
    if shape == "spaces_then_code_inline_fence":
        return "```python\nx = 1\n" + " " * n + "x```"
    if shape == "many_small_fences":  # issue 19 item 4's shape
        return "```\nx\n```\n" * (n // 10)
    if shape == "many_fence_lines":
        return "```\n" * (n // 4)
    if shape == "inline_candidates":
        return "```python\n" + "a```\n" * (n // 5)
    if shape == "long_backtick_run":
        return "```python\n" + "`" * n
    if shape == "nested_fences":  # ever longer fences, each quoting the previous ones
        k = int((2 * n) ** 0.5) // 2 + 3
        return "".join("`" * i + "python\n" for i in range(k, 2, -1)) + "print(1)\n" + "".join(
            "`" * i + "\n" for i in range(3, k + 1))
    if shape == "deep_list_indentation":
        out, depth = [], 0
        while sum(map(len, out)) < n:
            out.append(" " * depth + "- ```python\n" + " " * depth + "  x\n" + " " * depth + "  ```\n")
            depth += 2
        return "".join(out)
    if shape == "think_tags":
        return "</think>" * (n // 8)
    if shape == "trailing_end_tokens":  # an OpenRLHF response padded out with end tokens and spaces
        return "```python\nprint(1)\n```" + " <|im_end|>\n</s><pad>" * (n // 20)
    if shape == "almost_end_tokens":  # every candidate token tried at every step, none matching
        return "```python\nprint(1)\n```" + "<|end" * (n // 5)
    if shape == "closers_with_text":
        return "```python\n" + "``` done\n```python\nx = 1\n" * (n // 25)
    raise ValueError(shape)


SHAPES = ["spaces_then_inline_fence", "spaces_then_code_inline_fence", "many_small_fences", "many_fence_lines",
          "inline_candidates", "long_backtick_run", "nested_fences", "deep_list_indentation", "think_tags",
          "trailing_end_tokens", "almost_end_tokens", "closers_with_text"]


def _calls(fn, *args) -> int:
    """How many Python and C function calls ``fn(*args)`` makes (``sys.setprofile``: counts,
    not times, so the machine's speed and load do not matter)."""
    n = 0

    def prof(frame, event, arg):
        nonlocal n
        if event in ("call", "c_call"):
            n += 1

    sys.setprofile(prof)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return n


@pytest.mark.parametrize("shape", SHAPES)
def test_extract_work_grows_linearly(shape):
    """Eight times the input makes at most about eight times the calls (each call itself works on
    one line or one span of the text, each character a bounded number of times)."""
    small = _calls(extract_code, _adversarial(shape, 16_000))
    big = _calls(extract_code, _adversarial(shape, 128_000))
    assert big <= 8 * small + 200, (shape, small, big)


@pytest.mark.parametrize("shape", ["many_small_fences", "many_fence_lines", "inline_candidates", "deep_list_indentation"])
def test_extract_memory_stays_flat(shape):
    """The parse allocates no per-line or per-block lists: its peak is a small part of the input
    (before issue 19: a list of every line and every block, several times the input)."""
    text = _adversarial(shape, 400_000)
    tracemalloc.start()
    try:
        extract_code(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(text) // 8, (shape, peak, len(text))


def test_the_issue_shape_is_parsed_like_the_reference():
    """Issue 19 item 2: N spaces then an inline fence (``a` ```), at 64 KiB (the reference takes
    about a minute there, so it is compared on a short one)."""
    got = extract_code(_adversarial("spaces_then_inline_fence", 64 * 1024))
    assert not got.ok and "unclosed" in got.reason
    short = _adversarial("spaces_then_inline_fence", 300)
    assert extract_code(short).code == ref.extract_code(short)[0] is None
    got = extract_code(_adversarial("spaces_then_code_inline_fence", 64 * 1024))
    assert got.code == "x = 1\n" + " " * 64 * 1024 + "x\n"


def test_a_response_over_the_cap_is_format_error_unparsed():
    over = "```python\nprint(1)\n```\n" + " " * MAX_RESPONSE_CHARS
    got = extract_code(over)
    assert not got.ok
    assert got.reason == (f"the response is {len(over):,} characters, over the cap of 4,194,304 characters "
                          "on what is parsed (MAX_RESPONSE_CHARS)")
    at_cap = "```python\nprint(1)\n```\n" + " " * (MAX_RESPONSE_CHARS - 23)
    assert len(at_cap) == MAX_RESPONSE_CHARS and extract_code(at_cap).code == "print(1)\n"
    assert extract_code("```python\nprint(1)\n```\n", max_chars=10).reason.startswith("the response is 23 characters")


def test_compute_score_refuses_the_issue_50_mb_response_at_once():
    """Issue 19 item 4: a 50 MB response of 2.6 M small fences took 35 s and 1.1 GB; now it is
    FORMAT_ERROR with the cap in its reason, and the parse allocates nothing of its size."""
    response = "```\nx=1\n```\n" * 2_600_000 + "```python\nprint(3)\n```\n"
    assert len(response) > 30_000_000
    tracemalloc.start()
    try:
        r = compute_score("code_taco", response, {"inputs": ["\n"], "outputs": ["3\n"]})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (r["verdict"], r["score"]) == ("FORMAT_ERROR", 0.0)
    assert "over the cap of 4,194,304 characters on what is parsed" in r["reason"]
    assert peak < 4 * 1024 * 1024


def test_compute_score_max_response_chars_option():
    text = "```python\nprint(3)\n```\n"
    r = compute_score("code_taco", text, {"inputs": ["\n"], "outputs": ["3\n"]}, max_response_chars=len(text) - 1)
    assert r["verdict"] == "FORMAT_ERROR" and f"cap of {len(text) - 1:,} characters" in r["reason"]
    r = compute_score("code_taco", text, {"inputs": ["\n"], "outputs": ["3\n"]}, max_response_chars=len(text))
    assert (r["verdict"], r["score"]) == ("AC", 1.0)
    with pytest.raises(ValueError, match="max_response_chars"):
        compute_score("code_taco", text, {"inputs": ["\n"], "outputs": ["3\n"]}, max_response_chars=0)


# ------------------------------------------------------------------ ground-truth decoders

from arbiter.judge import jsonvalues  # noqa: E402
from arbiter.judge.encodings import pyliteral  # noqa: E402
from arbiter.judge.encodings.pyliteral import UnsafeLiteral, parse_call_arguments, parse_literal  # noqa: E402


def test_the_ground_truth_decoders_run_no_counted_or_built_regex():
    """By construction: no regex of the decoders is built at run time from a count (the old
    ``[0-9_]{4301}`` search retried at every digit of every shorter run: 4300 x n steps), except
    the escaped literal marker of ``dumps``."""
    for module in (jsonvalues, pyliteral):
        for p in _regex_patterns(module):
            if not isinstance(p, str):
                assert ast.unparse(p).startswith("re.escape("), \
                    f"{module.__name__}: a regex built at run time: {ast.unparse(p)}"
                continue
            assert "{" not in p, f"{module.__name__}: a counted repeat: {p!r}"


@pytest.fixture
def low_digit_limit():
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)  # CPython's minimum: runs around it stay short
    yield
    sys.set_int_max_str_digits(old)


@FUZZ
@given(st.lists(st.one_of(st.sampled_from(["[", "]", ", ", " ", "_", "'", '"', "\n", "0x", "-", "a", "1_2"]),
                          st.integers(1, 700).map(lambda n: "7" * n)), max_size=12).map("".join))
def test_long_int_rewrite_matches_the_reference(low_digit_limit, source):
    assert jsonvalues.rewrite_long_int_literals(source) == ref.rewrite_long_int_literals(source)


def test_long_int_literals_still_decode(low_digit_limit):
    big = "9" * 700
    assert parse_literal(f"[{big}, 1, {big}]") == [10**700 - 1, 1, 10**700 - 1]
    assert parse_call_arguments(f"n = {big}, m = [{big}]") == ([], {"n": 10**700 - 1, "m": [10**700 - 1]})


def test_a_chain_of_concatenations_is_built_once():
    """``a + b + c + ...`` is concatenated once (before: a copy of the growing list per term)."""
    terms = 500
    assert parse_literal(" + ".join(f"[{i}] * 1000" for i in range(terms))) == [
        i for i in range(terms) for _ in range(1000)]
    assert parse_literal(" + ".join(["'ab'"] * 500) + " + 'c'") == "ab" * 500 + "c"
    assert parse_literal("[1] + [2] * 2 + [3]") == [1, 2, 2, 3]
    assert parse_literal("1 - 2 - 3 + 2 * 3") == 2
    with pytest.raises(UnsafeLiteral, match="on list and int"):
        parse_literal("[1] + [2] + 3")


@pytest.mark.parametrize("text", [
    "[" + ", ".join(["[[0] * 1000] * 1000"] * 11) + "]",  # each operation under the cap, 11 M items in all
    "[" + ", ".join(["'x' * 9000000"] * 3) + "]",
    "[" + ", ".join(["[0] * 9999999"] * 2) + "]",
])
def test_a_literal_cannot_build_more_than_the_cap_in_all(text):
    """The cap on what a literal's operations build is per literal (before: per operation, so a
    few hundred bytes of ground truth built gigabytes)."""
    with pytest.raises(UnsafeLiteral, match="build more than 10000000 items"):
        parse_literal(text)
    with pytest.raises(UnsafeLiteral, match="build more than 10000000 items"):
        parse_call_arguments("x = " + text)


@FUZZ
@given(st.recursive(st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.none(), st.text(max_size=5),
                              st.floats(allow_nan=False, allow_infinity=False)),
                    lambda inner: st.one_of(st.lists(inner, max_size=4),
                                            st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                    max_leaves=20))
def test_parse_literal_reads_every_repr(value):
    """Any plain value's ``repr`` reads back as the value (tuples aside: lists)."""
    assert parse_literal(repr(value)) == value
    assert jsonvalues.loads(jsonvalues.dumps(value)) == value


# ------------------------------------------------------------------ problem statements (goldilocks)


@FUZZ
@given(st.lists(st.sampled_from(["`", "```", "\n", "a", " ", "``"]), max_size=30).map("".join))
def test_statement_fence_removal_matches_the_regex(text):
    """``goldilocks.english`` drops fenced blocks from a statement in one pass; the regex it
    replaced (the reference here) retried its line scan at every backtick of a long run."""
    import re

    from arbiter.pipelines.goldilocks.english import _without_fences

    assert _without_fences(text) == re.sub(r"```[^\n]*\n.*?```", "\n", text, flags=re.S)


def test_statement_fence_removal_work_grows_linearly():
    from arbiter.pipelines.goldilocks.english import _without_fences

    for shape in ("`" * 20_000, "```\n" * 5_000, "```x\n" + "a" * 20_000):
        big = shape * 8
        assert _calls(_without_fences, big) <= 8 * _calls(_without_fences, shape) + 20
    assert _without_fences("`" * 1_000_000) == "`" * 1_000_000
