"""arbiter inside real verl 0.8.0 (run by the 0.8.0 venv's python: ``scripts/verl_venv.sh 0.8.0``;
from the main venv, test_verl09_venv.py runs this file there). verl 0.8.0's ``main_ppo`` migrates the
legacy keys (top-level ``custom_reward_function``, ``reward_model.reward_manager``) into ``reward.``
and scores with the same reward loop as 0.9; its reward loop registers no ``batch`` manager. What
docs/verl.md says of 0.8 is checked here against verl's own config, migration and RewardLoopWorker."""

from __future__ import annotations

import importlib.metadata

import pytest

pytest.importorskip("verl.experimental.reward_loop", reason="needs verl (the 0.8.0 venv: scripts/verl_venv.sh 0.8.0)")
if not importlib.metadata.version("verl").startswith("0.8."):
    pytest.skip("verl 0.8 only (this is verl " + importlib.metadata.version("verl") + ")", allow_module_level=True)

from test_verl09_reward_loop import (FUNCTION_OVERRIDES, LEGACY_OVERRIDES, MANAGER_OVERRIDES,  # noqa: E402
                                     check_against, compose_config, expected_results, make_dataproto, make_tokenizer,
                                     real_items, run_worker)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    return make_tokenizer(tmp_path_factory.mktemp("tokenizer"))


@pytest.fixture(scope="module")
def items(shared, tmp_path_factory):
    return real_items(shared, tmp_path_factory.mktemp("rows"))[::2]


@pytest.fixture(scope="module")
def expected(items):
    return expected_results(items)


def main_ppo_config(overrides, tokenizer_dir=None):
    """The config as verl 0.8.0's ``main_ppo.main`` hands it on: composed, then migrated."""
    from verl.experimental.reward_loop import migrate_legacy_reward_impl

    return migrate_legacy_reward_impl(compose_config(overrides, tokenizer_dir))


def score(config, items, tokenizer_dir):
    from verl.utils import hf_tokenizer

    outputs, worker = run_worker(config, make_dataproto(items, hf_tokenizer(str(tokenizer_dir))))
    return outputs, worker


def test_legacy_keys_are_migrated_by_main_ppo_and_score_as_compute_score(items, expected, tokenizer_dir):
    from arbiter.verl.config_check import config_problems

    # the installed verl (0.8.0) migrates them: config_problems reads them so, before and after main_ppo does
    assert config_problems(compose_config(LEGACY_OVERRIDES)) == []
    config = main_ppo_config(LEGACY_OVERRIDES, tokenizer_dir)
    assert config_problems(config) == []
    assert config.reward.custom_reward_function.path == "pkg://arbiter.verl.reward"
    assert config.reward.reward_manager.name == "naive"
    outputs, worker = score(config, items, tokenizer_dir)
    assert type(worker.reward_manager).__name__ == "NaiveRewardManager"
    check_against(outputs, expected, items)


@pytest.mark.parametrize("name", ["batch", "prime"])
def test_batch_and_prime_managers_are_unknown_in_verl08(name):
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    legacy = [o for o in LEGACY_OVERRIDES if not o.startswith("reward_model.")] + [f"reward_model.reward_manager={name}"]
    for config in (main_ppo_config(legacy), main_ppo_config(FUNCTION_OVERRIDES + [f"reward.reward_manager.name={name}"])):
        with pytest.raises(ValueError, match=f"Unknown reward manager: {name}"):
            resolve_reward_manager_cls(config)


@pytest.mark.parametrize("overrides", [FUNCTION_OVERRIDES, MANAGER_OVERRIDES], ids=["function", "manager"])
def test_verl09_style_blocks_work_in_verl08(items, expected, tokenizer_dir, overrides):
    outputs, worker = score(main_ppo_config(overrides, tokenizer_dir), items, tokenizer_dir)
    check_against(outputs, expected, items)
    if overrides is MANAGER_OVERRIDES:
        assert type(worker.reward_manager).__name__ == "ArbiterRewardManager"
