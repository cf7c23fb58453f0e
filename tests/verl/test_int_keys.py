"""APPS/TACO/PrimeIntellect call cases with dict keys made ints, as their harness makes them.

hendrycks/apps ``eval/testing_util.py`` (l. 234-249), FlagOpen/TACO ``metrics/testing_util.py``
(``process_input_output``) and verl ``prime_code/testing_util.py`` (l. 233-248) undo JSON's string
keys per case: a dict first argument becomes ``{int(k): v}``, so does a dict output or the dict of
``[d]``; a key ``int()`` refuses leaves the dict as it is. Before, a correct ``d[1]`` was RE here.
Real sandbox, through the real ``compute_score``; LiveCodeBench and LeetCode rows do not convert.
docs/codegen.md (c), docs/encodings.md ("APPS / TACO").
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from arbiter.judge.codec import suite_from_json, suite_to_json
from arbiter.judge.encodings.apps import apps_input_output_to_suite
from arbiter.judge.encodings.verl import verl_ground_truth_to_suite
from arbiter.judge.step.key import suite_digest, verdict_key
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, TestSuite
from arbiter.rewards.routes import ROUTES
from arbiter.verl.reward import compute_score

APPS_ROUTES = ("taco", "code_taco", "apps", "primeintellect", "code_primeintellect")


def md(code: str) -> str:
    return f"```python\n{code}\n```"


def score(data_source: str, code: str, gt) -> dict:
    return compute_score(data_source, md(code), gt if isinstance(gt, str) else json.dumps(gt))


# An APPS input_output (one list of arguments per case, outputs wrapped), as the verl dict ground truth.
FIRST = {"fn_name": "first", "inputs": [[{"1": "a", "2": "b"}], [{"1": "z"}]], "outputs": [["a"], ["z"]]}
# The same cases as arbiter convert writes them (JSON lines in, JSON text out: prime_code's shape) ...
FIRST_LINES = {"fn_name": "first", "inputs": ['{"1": "a", "2": "b"}', '{"1": "z"}'], "outputs": ['["a"]', '["z"]']}
# ... and as the card's function_call cases (PrimeIntellect).
FIRST_CALLS = [{"type": "function_call", "fn_name": "first", "input": [{"1": "a", "2": "b"}], "output": ["a"]},
               {"type": "function_call", "fn_name": "first", "input": [{"1": "z"}], "output": ["z"]}]

INT_KEYS = "def first(d):\n    return d[1]"
STR_KEYS = 'def first(d):\n    return d["1"]'
EITHER = 'def first(d):\n    return d[1] if 1 in d else d["1"]'
WRONG = 'def first(d):\n    return d.get(2, "?")'


@pytest.mark.parametrize("data_source", APPS_ROUTES)
@pytest.mark.parametrize("gt", [FIRST, FIRST_LINES, FIRST_CALLS], ids=["dict", "json_lines", "function_call"])
def test_a_dict_argument_reaches_the_function_with_int_keys(data_source, gt):
    """``d[1]``: 1.0 (RE, 0.0 before); a wrong program 0.0; ``d["1"]``: the KeyError the reference gives it."""
    assert score(data_source, INT_KEYS, gt)["score"] == 1.0
    wrong = score(data_source, WRONG, gt)
    assert (wrong["score"], wrong["verdict"]) == (0.0, "WA")
    strs = score(data_source, STR_KEYS, gt)
    assert (strs["score"], strs["verdict"]) == (0.0, "RE") and "KeyError" in strs["reason"]
    assert score(data_source, EITHER, gt)["score"] == 1.0


def test_a_method_of_class_solution_gets_int_keys_too():
    code = "class Solution:\n    def first(self, d):\n        return d[1]"
    assert score("taco", code, FIRST)["score"] == 1.0


@pytest.mark.parametrize("data_source", ["livecodebench", "code_lcbv5", "leetcode", "code_leetcode"])
def test_livecodebench_and_leetcode_rows_keep_string_keys(data_source):
    """Their harnesses (LCB ``grade_call_based``: ``json.loads``; LeetCode's ``check()``) never re-key."""
    assert score(data_source, STR_KEYS, FIRST_CALLS)["score"] == 1.0
    assert score(data_source, INT_KEYS, FIRST_CALLS)["verdict"] == "RE"
    assert score(data_source, EITHER, FIRST_CALLS)["score"] == 1.0


def test_a_key_int_refuses_leaves_the_dict_as_it_is():
    """testing_util's ``try`` swallows the ValueError: every key stays a string, the numeric ones too."""
    gt = {"fn_name": "f", "inputs": [[{"a": 1, "2": 5}]], "outputs": [[6]]}
    assert score("taco", 'def f(d):\n    return d["a"] + d["2"]', gt)["score"] == 1.0
    assert score("taco", 'def f(d):\n    return d["a"] + d[2]', gt)["verdict"] == "RE"


def test_int_spells_keys_as_int_does():
    """``int(" 7")``, ``int("-3")``, ``int("0_1")``: the keys the reference's ``int(k)`` gives."""
    gt = {"fn_name": "f", "inputs": [[{" 7": 1, "-3": 2, "0_1": 3}]], "outputs": [[[-3, 1, 7]]]}
    assert score("taco", "def f(d):\n    return sorted(d)", gt)["score"] == 1.0


def test_the_other_arguments_are_kept():
    """(The reference calls the function with the dict alone, so it fails this case whatever the
    program; arbiter keeps the arguments: docs/codegen.md (c).)"""
    gt = {"fn_name": "f", "inputs": [[{"1": 5}, 3], [{"x": 5}, 4]], "outputs": [[8], [9]]}
    code = 'def f(d, x):\n    return d[1] + x if 1 in d else d["x"] + x'
    assert score("taco", code, gt)["score"] == 1.0


DICT_OUT = {"fn_name": "squares", "inputs": [[3]], "outputs": [{"1": 1, "2": 4, "3": 9}]}
DICT_OUT_WRAPPED = {"fn_name": "squares", "inputs": [[3]], "outputs": [[{"1": 1, "2": 4, "3": 9}]]}
SQUARES = "def squares(n):\n    return {i: i * i for i in range(1, n + 1)}"


@pytest.mark.parametrize("gt", [DICT_OUT, DICT_OUT_WRAPPED], ids=["bare", "wrapped"])
def test_a_dict_output_is_accepted_as_the_reference_accepts_it(gt):
    """Re-keyed to ``[d]``: ``d`` and ``[d]`` pass there (``ret == output or ret == output[0]``)."""
    assert score("taco", SQUARES, gt)["score"] == 1.0
    assert score("taco", "def squares(n):\n    return [{i: i * i for i in range(1, n + 1)}]", gt)["score"] == 1.0
    assert score("taco", "def squares(n):\n    return {i: i + i for i in range(1, n + 1)}", gt)["verdict"] == "WA"
    assert score("taco", "def squares(n):\n    return {i: i * i for i in range(1, n)}", gt)["verdict"] == "WA"


def test_an_expected_key_is_the_int_the_reference_makes_of_it():
    """``{"01": 5}`` is ``{1: 5}`` there: ``{1: 5}`` passes (WA before), ``{"01": 5}`` fails as there."""
    gt = {"fn_name": "f", "inputs": [[0]], "outputs": [[{"01": 5}]]}
    assert score("taco", "def f(x):\n    return {1: 5}", gt)["score"] == 1.0
    assert score("taco", 'def f(x):\n    return {"01": 5}', gt)["verdict"] == "WA"
    assert score("livecodebench", 'def f(x):\n    return {"01": 5}', [
        {"type": "function_call", "fn_name": "f", "input": [0], "output": [{"01": 5}]}])["score"] == 1.0


def test_a_bare_dict_output_with_other_keys_accepts_only_itself():
    gt = {"fn_name": "f", "inputs": [[0]], "outputs": [{"a": 1}]}
    assert score("taco", 'def f(x):\n    return {"a": 1}', gt)["score"] == 1.0
    assert score("taco", 'def f(x):\n    return [{"a": 1}]', gt)["verdict"] == "WA"


def test_returned_key_types_are_not_told_apart():
    """Known and kept: the value reaches the checker as JSON, keys compared by their JSON text on
    every route, so string keys pass for an int-keyed answer (the reference's ``==`` refuses)."""
    assert score("taco", 'def squares(n):\n    return {str(i): i * i for i in range(1, n + 1)}', DICT_OUT)["score"] == 1.0


# ------------------------------------------------------------------ decoding, the call spec, the key

def test_the_route_decides_and_the_decoder_marks_cases():
    assert {name for name, r in ROUTES.items() if r.int_keys} == {"taco", "code_taco", "apps", "code_apps",
                                                                  "primeintellect", "code_primeintellect"}
    plain = verl_ground_truth_to_suite(json.dumps(FIRST), row="r")
    keyed = verl_ground_truth_to_suite(json.dumps(FIRST), row="r", int_keys=True)
    assert [c.int_keys for c in plain] == [False, False] and [c.int_keys for c in keyed] == [True, True]
    assert keyed.cases[0].args == ({"1": "a", "2": "b"},)  # the argument travels as JSON: the harness re-keys
    assert apps_input_output_to_suite(json.dumps(FIRST), row="r").cases == keyed.cases
    out = verl_ground_truth_to_suite(json.dumps(DICT_OUT), row="r", int_keys=True).cases[0]
    assert out.expected == ({1: 1, 2: 4, 3: 9}, [{1: 1, 2: 4, 3: 9}]) and not out.int_keys
    odd = {"fn_name": "f", "inputs": [[{"a": 1}], [{}], [[1]], []], "outputs": [[1], [1], [1], [1]]}
    assert [c.int_keys for c in verl_ground_truth_to_suite(odd, row="r", int_keys=True)] == [False] * 4


def test_the_flag_is_checked_and_survives_the_codec():
    with pytest.raises(TypeError, match="int_keys"):
        CallCase("c", "f", ([1],), {}, (1,), int_keys=True)
    with pytest.raises(TypeError, match="int_keys"):
        CallCase("c", "f", ({"1": 1},), {}, (1,), int_keys=1)
    suite = verl_ground_truth_to_suite(json.dumps(FIRST), row="r", int_keys=True)
    back = suite_from_json(json.loads(json.dumps(suite_to_json(suite))))
    assert back.cases == suite.cases
    assert "int_keys" not in json.dumps(suite_to_json(verl_ground_truth_to_suite(json.dumps(FIRST), row="r")))


def test_a_row_with_and_without_the_flag_never_shares_a_verdict():
    case = CallCase("0", "first", ({"1": "a"},), {}, ("a",))
    flagged = dataclasses.replace(case, int_keys=True)
    assert suite_digest(TestSuite([case])) != suite_digest(TestSuite([flagged]))
    tasks = [Task("python", INT_KEYS, TestSuite([c])) for c in (case, flagged)]
    assert verdict_key(tasks[0]) != verdict_key(tasks[1])


def test_every_door_gives_compute_scores_result(tmp_path):
    """The route's flag is read where the suite is decoded: each door decodes through its own path
    (the batch's up-front row check, the verl manager's batcher, the per-node pool, the scoring
    stream's suite cache, the service), so each is held to ``compute_score``'s result."""
    from arbiter.cluster.pool import JudgePool
    from arbiter.pipelines.codegen import score_completions
    from arbiter.rewards.codegen import RewardOptions
    from arbiter.verl.batcher import RewardBatcher
    from arbiter.verl.judges import LocalJudges
    from arbiter.verl.reward import compute_score_batch

    gt = json.dumps(FIRST_CALLS)
    codes = [INT_KEYS, STR_KEYS, WRONG]
    items = [("code_taco", md(c), gt, {"index": f"k{i}"}) for i, c in enumerate(codes)]
    keys = ("score", "verdict", "passed", "total")
    want = [{k: compute_score(*item, reuse=False)[k] for k in keys} for item in items]
    assert [w["verdict"] for w in want] == ["AC", "RE", "WA"]

    def same(results):
        assert [{k: r[k] for k in keys} for r in results] == want

    columns = [list(x) for x in zip(*items)]
    same(compute_score_batch(*columns))
    batcher = RewardBatcher(LocalJudges(), RewardOptions())

    async def through_the_batcher():
        return await asyncio.gather(*(batcher.score(i) for i in items))

    same(asyncio.run(through_the_batcher()))
    same(JudgePool("in-process", 2).score_batch(*columns))
    row = {"data_source": "code_taco", "prompt": [{"role": "user", "content": "first"}], "ability": "code",
           "reward_model": {"style": "rule", "ground_truth": gt}, "extra_info": {"index": "r0"}}
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"index": "r0", "responses": [md(c) for c in codes]}) + "\n")
    score_completions(tmp_path / "rows.jsonl", tmp_path / "c.jsonl", tmp_path / "out")
    same([json.loads(x) for x in (tmp_path / "out" / "verdicts.jsonl").read_text().splitlines()])
    pytest.importorskip("httpx")
    from live_server import LiveServer

    from arbiter.client import Client

    server = LiveServer()
    try:
        same(Client(server.url).score(items, {}))
    finally:
        assert server.stop() == 0
