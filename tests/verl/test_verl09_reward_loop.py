"""arbiter inside real verl 0.9.1 (run by the verl venv's python: scripts/verl_venv.sh; from the main
venv, test_verl09_venv.py runs this file there). verl's own hydra ``ppo_trainer`` config composed
with the documented overrides; verl's ``RewardLoopWorker`` scoring a ``DataProto`` of real converted
rows (references, wrong generations, no-code responses) with arbiter's reward-loop manager and
with the ``compute_score`` function, every value checked against ``compute_score`` itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# not importorskip("verl"): tests/verl is on sys.path (conftest), so a bare "verl" may be that folder
pytest.importorskip("verl.experimental.reward_loop", reason="needs verl 0.9 (the verl venv: scripts/verl_venv.sh; "
                    "test_verl09_venv.py runs these tests there)")

import verl  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import torch  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402

import arbiter.verl.reward as reward_mod  # noqa: E402
from arbiter.datasets.convert import convert  # noqa: E402
from arbiter.verl.config_check import config_problems  # noqa: E402
from arbiter.verl.reward import RESULT_KEYS, compute_score  # noqa: E402

FUNCTION_OVERRIDES = [  # README / docs/verl.md: the verl 0.9 keys, function form
    "reward.custom_reward_function.path=pkg://arbiter.verl.reward",
    "reward.custom_reward_function.name=compute_score",
    "reward.reward_manager.name=naive",
]
MANAGER_OVERRIDES = [  # docs/verl.md: arbiter's reward-loop manager
    "reward.reward_manager.source=importlib",
    "reward.reward_manager.name=ArbiterRewardManager",
    "reward.reward_manager.module.path=pkg://arbiter.verl.reward_loop",
    "reward.custom_reward_function.path=pkg://arbiter.verl.reward",
]
LEGACY_OVERRIDES = [  # verl <= 0.8 keys: accepted by verl 0.9's config, ignored by its main_ppo
    "custom_reward_function.path=pkg://arbiter.verl.reward",
    "custom_reward_function.name=compute_score",
    "reward_model.reward_manager=naive",
]
#: the keys compared value for value (the other RESULT_KEYS are timings: checked >= 0)
EXACT_KEYS = ("score", "acc", "verdict", "passed", "total", "reason", "warning")


def compose_config(overrides: list[str], tokenizer_dir: Path | None = None):
    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    extra = [f"actor_rollout_ref.model.path={tokenizer_dir}"] if tokenizer_dir else []
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides + extra)


def make_tokenizer(out: Path) -> Path:
    """A byte-level tokenizer (one token per byte; decodes any text exactly), built locally:
    verl's reward worker loads its tokenizer from ``actor_rollout_ref.model.path``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.pre_tokenizers import ByteLevel

    vocab = {ch: i for i, ch in enumerate(sorted(ByteLevel.alphabet()))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>", "<pad>"])
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>", "pad_token": "<pad>",
        "model_max_length": 1 << 22}))
    return out


def fence(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code}\n```\n"


def real_items(shared: Path, out: Path) -> list[tuple[dict, str, str]]:
    """(verl row as verl reads it from parquet, response, kind) from real converted rows: APPS
    references and CodeRL generations of each label, LeetCode references (call-based) and a
    LeetCode reference answering another problem, and prose without code."""
    rows = {}
    for source, rel in {"apps": "coderl_apps", "leetcode": "leetcodedataset/LeetCodeDataset-v0.3.1-test.jsonl.gz"}.items():
        report = convert(source, shared / "realdata" / rel, out / f"{source}.parquet")
        assert report.bad == [] and report.written > 0
        rows[source] = pq.read_table(out / f"{source}.parquet").to_pylist()
    items = []
    by_id = {r["extra_info"]["id"]: r for r in rows["apps"]}
    for problem in sorted((shared / "realdata" / "coderl_apps" / "train").iterdir()):
        row = by_id[f"train/{problem.name}"]
        items += [(row, fence(ref), "reference") for ref in row["extra_info"]["reference_solutions"][:2]]
        seen = set()
        for gen in json.loads((problem / "gen_solutions.json").read_text()):
            label = json.dumps(gen["result"])
            if label not in seen:
                seen.add(label)
                items.append((row, fence(gen["code"]), f"generation {label}"))
        items.append((row, "I am not sure how to solve this problem, sorry.", "no code"))
    lc = rows["leetcode"][:4]
    items += [(row, fence(row["extra_info"]["reference_solutions"][0]), "reference") for row in lc[:3]]
    items += [(lc[i], fence(lc[i + 1]["extra_info"]["reference_solutions"][0]), "other problem's answer")
              for i in range(2)]
    return items


def make_dataproto(items: list[tuple[dict, str, str]], tokenizer):
    """A DataProto as verl's trainer hands the reward loop: left-padded prompts, right-padded
    responses ending in EOS, the attention mask over both, the row's non-tensor columns."""
    from verl import DataProto

    prompt_len = 4
    encoded = [tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id] for _, text, _ in items]
    width = max(map(len, encoded))
    responses = torch.full((len(items), width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(items), prompt_len + width), dtype=torch.long)
    mask[:, :prompt_len] = 1
    for i, ids in enumerate(encoded):
        responses[i, :len(ids)] = torch.tensor(ids)
        mask[i, prompt_len:prompt_len + len(ids)] = 1
    prompts = torch.zeros((len(items), prompt_len), dtype=torch.long)
    non_tensors = {"data_source": np.array([r["data_source"] for r, _, _ in items], dtype=object),
                   "reward_model": np.array([r["reward_model"] for r, _, _ in items], dtype=object),
                   "extra_info": np.array([r["extra_info"] for r, _, _ in items], dtype=object)}
    return DataProto.from_dict(tensors={"prompts": prompts, "responses": responses, "attention_mask": mask},
                               non_tensors=non_tensors)


def expected_results(items) -> list[dict]:
    """compute_score on each response, as the reference for every other path."""
    return [compute_score(data_source=r["data_source"], solution_str=text, ground_truth=r["reward_model"]["ground_truth"],
                          extra_info=r["extra_info"]) for r, text, _ in items]


def check_against(outputs: list[dict], expected: list[dict], items) -> None:
    assert len(outputs) == len(expected) == len(items)
    for out, want, (row, _, kind) in zip(outputs, expected, items):
        info = out["reward_extra_info"]
        assert out["reward_score"] == want["score"], (kind, row["extra_info"].get("id"), info, want)
        assert sorted(info) == sorted(RESULT_KEYS), kind
        assert {k: info[k] for k in EXACT_KEYS} == {k: want[k] for k in EXACT_KEYS}, kind
        assert all(isinstance(info[k], (int, float)) and info[k] >= 0 for k in ("seconds", "judge_seconds", "cpu_seconds"))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    return make_tokenizer(tmp_path_factory.mktemp("tokenizer"))


@pytest.fixture(scope="module")
def items(shared, tmp_path_factory):
    got = real_items(shared, tmp_path_factory.mktemp("rows"))
    kinds = {kind for _, _, kind in got}
    assert {"reference", "no code", "other problem's answer", "generation true", "generation false"} <= kinds
    return got


@pytest.fixture(scope="module")
def expected(items):
    results = expected_results(items)
    verdicts = {r["verdict"] for r in results}
    assert {"AC", "WA", "FORMAT_ERROR"} <= verdicts, verdicts  # the sample really mixes right and wrong
    return results


# ------------------------------------------------------------------ the config


def test_documented_verl09_keys_name_arbiter():
    config = compose_config(FUNCTION_OVERRIDES)
    assert config.reward.custom_reward_function.path == "pkg://arbiter.verl.reward"
    assert config.reward.custom_reward_function.name == "compute_score"
    assert config_problems(config) == []
    manager = compose_config(MANAGER_OVERRIDES)
    assert manager.reward.reward_manager.module.path == "pkg://arbiter.verl.reward_loop"
    assert config_problems(manager) == []
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    from arbiter.verl.reward_loop import ArbiterRewardManager

    assert resolve_reward_manager_cls(manager) is ArbiterRewardManager


def test_a_function_name_the_reward_loop_cannot_call_per_response_is_reported():
    """compute_score_batch (lists) or a name the module lacks passed the check, then failed at the first
    step (new-user walkthrough): verl's own loader and a per-response call show why."""
    from verl.trainer.ppo.reward import get_custom_reward_fn

    for name in ("compute_score_batch", "no_such_function"):
        config = compose_config([*FUNCTION_OVERRIDES[:1], f"reward.custom_reward_function.name={name}",
                                 *FUNCTION_OVERRIDES[2:]])
        problems = config_problems(config)
        assert len(problems) == 1 and repr(name) in problems[0], problems
    fn = get_custom_reward_fn(compose_config([*FUNCTION_OVERRIDES[:1], "reward.custom_reward_function.name="
                                              "compute_score_batch", *FUNCTION_OVERRIDES[2:]]))
    with pytest.raises(TypeError):
        fn(data_source="codecontests", solution_str="x", ground_truth="{}", extra_info={})
    for name in ("compute_score", "compute_score_async", "compute_score_float"):
        config = compose_config([*FUNCTION_OVERRIDES[:1], f"reward.custom_reward_function.name={name}",
                                 *FUNCTION_OVERRIDES[2:]])
        assert config_problems(config) == [], name


def test_legacy_keys_are_ignored_by_verl09_and_reported():
    config = compose_config(LEGACY_OVERRIDES)
    assert config.reward.custom_reward_function.path is None  # what verl 0.9's main_ppo reads
    problems = config_problems(config)
    assert any("legacy top-level custom_reward_function" in p for p in problems), problems
    assert any("reward_model.reward_manager" in p for p in problems), problems
    from verl.experimental.reward_loop import migrate_legacy_reward_impl  # the fully-async entry point's

    assert migrate_legacy_reward_impl(config).reward.custom_reward_function.path == "pkg://arbiter.verl.reward"


def compose_fully_async(overrides: list[str]):
    """verl's fully-async trainer config (``fully_async_ppo_trainer``: ``ppo_trainer`` plus ``async_training``)."""
    config_dir = Path(verl.__file__).parent / "experimental" / "fully_async_policy" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name="fully_async_ppo_trainer", overrides=overrides)


def test_legacy_keys_that_fully_async_training_honours_are_not_called_wrong():
    """verl 0.9.1's fully_async_main runs migrate_legacy_reward_impl before training: there the legacy keys name
    what is used (config_problems called them ignored)."""
    from verl.experimental.reward_loop import migrate_legacy_reward_impl

    config = compose_fully_async(LEGACY_OVERRIDES)
    assert config.async_training is not None and config.reward.custom_reward_function.path is None
    assert config_problems(config) == []
    migrated = migrate_legacy_reward_impl(compose_fully_async(LEGACY_OVERRIDES))
    assert migrated.reward.custom_reward_function.path == "pkg://arbiter.verl.reward"
    assert migrated.reward.reward_manager.name == "naive"
    assert config_problems(migrated) == []
    # the documented verl 0.9 keys stay right in fully-async training
    assert config_problems(compose_fully_async(FUNCTION_OVERRIDES)) == []
    assert config_problems(compose_fully_async(MANAGER_OVERRIDES)) == []


def test_a_legacy_key_that_fully_async_migrates_over_arbiter_is_reported():
    """The migration replaces reward.custom_reward_function by the legacy one whenever that is set: a legacy
    path naming another function wins over arbiter's, and a legacy manager verl 0.9 does not register fails."""
    from verl.experimental.reward_loop import migrate_legacy_reward_impl

    overrides = FUNCTION_OVERRIDES + ["custom_reward_function.path=pkg://my_rewards.code",
                                      "custom_reward_function.name=score"]
    problems = config_problems(compose_fully_async(overrides))
    assert migrate_legacy_reward_impl(compose_fully_async(overrides)).reward.custom_reward_function.path == \
        "pkg://my_rewards.code"
    assert len(problems) == 1 and "fully-async training migrates over" in problems[0], problems
    bad_manager = config_problems(compose_fully_async(FUNCTION_OVERRIDES + ["reward_model.reward_manager=batch"]))
    assert [p for p in bad_manager if "'batch' is not registered in verl 0.9" in p], bad_manager


@pytest.mark.parametrize("name", ["batch", "prime"])
def test_legacy_manager_names_fail_in_verl09_and_are_reported(name):
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    config = compose_config(FUNCTION_OVERRIDES + [f"reward.reward_manager.name={name}"])
    with pytest.raises(ValueError, match=f"Unknown reward manager: {name}"):
        resolve_reward_manager_cls(config)
    assert [p for p in config_problems(config) if "is not registered in verl 0.9" in p]


@pytest.mark.parametrize("path", [reward_mod.__file__, "file://" + reward_mod.__file__])
def test_file_path_loading_gives_the_package_functions(path):
    from verl.utils.import_utils import load_extern_object

    config = compose_config([f"reward.custom_reward_function.path={path}"])
    loaded = load_extern_object(config.reward.custom_reward_function.path, "compute_score")
    assert loaded is compute_score  # the very function: one judge cap per process, not two
    assert config_problems(config) == []


# ------------------------------------------------------------------ verl's RewardLoopWorker


def run_worker(config, data) -> tuple[list[dict], object]:
    from verl.experimental.reward_loop import RewardLoopWorker

    worker = RewardLoopWorker(config)  # as a Ray actor runs it: on the loop the worker was made with
    return worker.loop.run_until_complete(worker.compute_score_batch(data)), worker


def test_reward_loop_worker_with_arbiter_manager_matches_compute_score(items, expected, tokenizer_dir):
    config = compose_config(MANAGER_OVERRIDES, tokenizer_dir)
    from verl.utils import hf_tokenizer

    data = make_dataproto(items, hf_tokenizer(str(tokenizer_dir)))
    outputs, worker = run_worker(config, data)
    check_against(outputs, expected, items)
    manager = worker.reward_manager
    assert type(manager).__name__ == "ArbiterRewardManager"
    assert manager.batcher.judges.name == "process"  # no Ray here
    assert sum(manager.batcher.batches) == len(items) and max(manager.batcher.batches) > 1  # judged in batches


def test_reward_loop_worker_with_compute_score_function_matches(items, expected, tokenizer_dir):
    config = compose_config(FUNCTION_OVERRIDES, tokenizer_dir)
    from verl.utils import hf_tokenizer

    data = make_dataproto(items, hf_tokenizer(str(tokenizer_dir)))
    outputs, worker = run_worker(config, data)
    assert type(worker.reward_manager).__name__ == "NaiveRewardManager"
    check_against(outputs, expected, items)


def test_manager_file_path_loading_gives_the_package_class():
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    import arbiter.verl.reward_loop as manager_mod

    overrides = [o for o in MANAGER_OVERRIDES if "module.path" not in o]
    config = compose_config(overrides + [f"reward.reward_manager.module.path={manager_mod.__file__}"])
    assert resolve_reward_manager_cls(config) is manager_mod.ArbiterRewardManager


# ------------------------------------------------------------------ DAPO's group filter


@pytest.mark.parametrize("overrides", [FUNCTION_OVERRIDES, MANAGER_OVERRIDES], ids=["function", "manager"])
def test_dapo_filter_groups_reads_acc_from_arbiters_rewards(items, expected, tokenizer_dir, overrides, monkeypatch):
    """``algorithm.filter_groups.metric=acc``: verl's replay buffer reads ``acc`` from each
    response's ``reward_extra_info`` (what the agent loop stores from the reward loop's answer)
    and drops the groups whose ``acc`` is the same for every response. verl's own
    ``_dapo_filtered_keys`` runs on arbiter's answers; only its transfer-queue store is a dict here."""
    from verl.trainer.ppo.v1 import replay_buffer as rb
    from verl.utils import hf_tokenizer

    data = make_dataproto(items, hf_tokenizer(str(tokenizer_dir)))
    outputs, _ = run_worker(compose_config(overrides, tokenizer_dir), data)
    # groups ("<uid>_<n>" trajectory keys, as the buffer stores them): every response, and those of each kind
    kinds = sorted({kind for _, _, kind in items})
    by_row: dict[str, list[int]] = {"all": list(range(len(items)))}
    for k, kind in enumerate(kinds):
        by_row[f"kind{k}"] = [i for i, (_, _, got) in enumerate(items) if got == kind]
    store = {f"{uid}_{n}": {"reward_extra_info": outputs[i]["reward_extra_info"]}
             for uid, members in by_row.items() for n, i in enumerate(members)}
    monkeypatch.setattr(rb, "tq", type("Store", (), {"kv_batch_get": staticmethod(
        lambda keys, partition_id, select_fields: {"extra_fields": [store[k] for k in keys]})}))
    buffer = object.__new__(rb.ReplayBuffer)
    buffer.filter_groups_metric = "acc"
    buffer.finished_keys = {"train": set(by_row)}
    buffer.partitions = {"train": {k: {} for k in store}}
    buffer._dapo_classification_cache = {"train": {}}
    filtered, counts = buffer._dapo_filtered_keys("train")
    same = {uid for uid, members in by_row.items()
            if len(members) > 1 and len({expected[i]["score"] for i in members}) == 1}
    assert filtered == same and f"kind{kinds.index('no code')}" in same and "all" not in same
    assert sum(counts.values()) == len(same)
    assert all(outputs[i]["reward_extra_info"]["acc"] == expected[i]["score"] for i in range(len(items)))
