"""The verl-free parts of the verl 0.9 manager, in arbiter's own venv: the batcher (concurrent
per-response calls judged together, each caller getting its own result or error, equal to
compute_score's) and the config check on plain dicts."""

from __future__ import annotations

import asyncio
import json

import pytest

from arbiter.rewards.codegen import InvalidTask, RewardOptions
from arbiter.verl.batcher import RewardBatcher
from arbiter.verl.config_check import config_problems, names_arbiter
from arbiter.verl.judges import LocalJudges, judges_for
from arbiter.verl.reward import compute_score

SUM = json.dumps({"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]})
OK = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
WRONG = "```python\na, b = map(int, input().split())\nprint(a - b)\n```"
ITEMS = [("code_taco", OK, SUM, {"index": 1}), ("code_taco", WRONG, SUM, {"index": 2}),
         ("code_taco", "no code here", SUM, {"index": 3}), ("code_taco", "```python\nprint(\n```", SUM, {"index": 4})]


async def _score_all(batcher, items):
    return await asyncio.gather(*(batcher.score(i) for i in items), return_exceptions=True)


def test_concurrent_calls_are_judged_in_one_batch_with_compute_scores_results():
    batcher = RewardBatcher(LocalJudges(), RewardOptions())
    results = asyncio.run(_score_all(batcher, ITEMS))
    assert batcher.batches == [len(ITEMS)]
    expected = [compute_score(*item) for item in ITEMS]
    assert [r["verdict"] for r in results] == ["AC", "WA", "FORMAT_ERROR", "CE"]
    for got, want in zip(results, expected):
        assert {k: got[k] for k in ("score", "verdict", "passed", "total", "reason")} == \
               {k: want[k] for k in ("score", "verdict", "passed", "total", "reason")}


def test_each_caller_gets_its_own_error():
    items = [ITEMS[0], ("gsm8k", OK, SUM, None), ("code_taco", OK, json.dumps({"inputs": [], "outputs": []}), {"index": 9})]
    batcher = RewardBatcher(LocalJudges(), RewardOptions(), max_batch=3)
    ok, non_code, invalid = asyncio.run(_score_all(batcher, items))
    assert ok["verdict"] == "AC"
    assert isinstance(non_code, ValueError) and "gsm8k" in str(non_code)
    assert isinstance(invalid, InvalidTask) and "code_taco:9" in str(invalid)
    zero = asyncio.run(_score_all(RewardBatcher(LocalJudges(), RewardOptions(on_invalid="zero")), items[2:]))
    assert zero[0]["verdict"] == "INVALID_TASK" and zero[0]["score"] == 0.0


def test_pool_choice_outside_ray():
    assert judges_for("auto").name == "process"
    with pytest.raises(ValueError, match="pool must be one of"):
        judges_for("cluster")


@pytest.mark.parametrize("path, ok", [("pkg://arbiter.verl.reward", True), ("pkg://arbiter/verl/reward", True),
                                      ("/x/src/arbiter/verl/reward.py", True), ("file:///a/arbiter/verl/reward.py", True),
                                      ("pkg://my.reward", False), (None, False), ("", False)])
def test_names_arbiter(path, ok):
    assert names_arbiter(path) is ok


def test_config_problems_on_plain_dicts():
    good = {"reward": {"custom_reward_function": {"path": "pkg://arbiter.verl.reward"}, "reward_manager": {"name": "naive"}}}
    assert config_problems(good) == []
    manager = {"reward": {"custom_reward_function": {"path": None},
                          "reward_manager": {"source": "importlib", "name": "ArbiterRewardManager",
                                             "module": {"path": "pkg://arbiter.verl.reward_loop"}}}}
    assert config_problems(manager) == []
    manager["reward"]["reward_manager"]["module"]["path"] = "/site-packages/arbiter/verl/reward_loop.py"
    assert config_problems(manager) == []
    legacy = {"custom_reward_function": {"path": "pkg://arbiter.verl.reward"}, "reward_model": {"reward_manager": "batch"},
              "reward": {"custom_reward_function": {"path": None}, "reward_manager": {"name": "batch"}}}
    problems = config_problems(legacy)
    assert len(problems) == 4, problems


def test_legacy_keys_are_read_as_the_verl_at_hand_reads_them():
    """verl 0.8's main_ppo migrates the legacy keys (they work: no problem), 0.9's ignores them (each
    named); with verl_version left out, the installed verl decides (none here: read as 0.9)."""
    legacy = {"custom_reward_function": {"path": "pkg://arbiter.verl.reward", "name": "compute_score"},
              "reward_model": {"reward_manager": "naive"},
              "reward": {"custom_reward_function": {"path": None}, "reward_manager": {"name": "naive"}}}
    assert config_problems(legacy, verl_version="0.8.0") == []
    ignored = config_problems(legacy, verl_version="0.9.1")
    assert len(ignored) == 3 and all("ignore" in p for p in ignored[1:]), ignored
    assert config_problems(legacy) == ignored
    foreign = {**legacy, "custom_reward_function": {"path": "/my/reward.py", "name": "score"}}
    [problem] = config_problems(foreign, verl_version="0.8.0")  # the migration puts it over arbiter's
    assert problem.startswith("custom_reward_function.path (the legacy key, which verl 0.8's main_ppo migrates"), problem
