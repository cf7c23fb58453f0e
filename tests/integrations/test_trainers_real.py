"""arbiter's adapters inside the real trainers (run by the verl 0.9.1 venv's python, which holds TRL
1.16.0 and OpenRLHF; from the main venv test_verl09_venv.py runs this file there):

- TRL: a real ``GRPOTrainer`` (a tiny model made here from a config, a tokenizer built here: nothing
  downloaded) on arbiter's Parquet through HF ``datasets``; its own reward step
  ``_calculate_rewards``, and one training step on CPU;
- open-r1: its ``code_reward`` binding (``partial(code_reward, num_parallel=..., provider_type=...)``,
  as ``get_reward_funcs`` makes it) in that same trainer, on a ``verification_info`` column;
- OpenRLHF: its own ``SingleTurnAgentExecutor`` loading ``reward_func`` from arbiter's file
  (``--remote_rm_url``) and scoring a generation (the LLM engine answers fixed token ids).
Every reward is held to ``compute_score``'s."""

from __future__ import annotations

import asyncio
import functools
import json
from types import SimpleNamespace

import pytest

pytest.importorskip("trl", reason="needs TRL (the verl 0.9.1 venv: scripts/verl_venv.sh)")

import torch  # noqa: E402
from datasets import Dataset, load_dataset  # noqa: E402
from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import arbiter.integrations.openrlhf as openrlhf_adapter  # noqa: E402
from arbiter.integrations.open_r1 import code_reward, ground_truth  # noqa: E402
from arbiter.integrations.trl import arbiter_reward  # noqa: E402
from arbiter.verl.reward import compute_score  # noqa: E402
from test_adapters import cases, open_r1_rows  # noqa: E402
from test_verl09_reward_loop import make_tokenizer  # noqa: E402

CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    folder = make_tokenizer(tmp_path_factory.mktemp("tokenizer"))
    tok = AutoTokenizer.from_pretrained(str(folder))
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = CHAT_TEMPLATE
    return tok


@pytest.fixture(scope="module")
def rows(shared, tmp_path_factory):
    out = tmp_path_factory.mktemp("rows")
    items = cases(shared, out)
    data = load_dataset("parquet", data_files=[str(out / "apps.parquet"), str(out / "leetcode.parquet")],
                        split="train")  # arbiter's Parquet as TRL users load it
    by_index = {r["extra_info"]["index"]: r for r in data}
    return [(by_index[r["extra_info"]["index"]], text) for r, text in items]


@pytest.fixture(scope="module")
def expected(rows):
    return [compute_score(r["data_source"], t, r["reward_model"]["ground_truth"], r["extra_info"])["score"]
            for r, t in rows]


def tiny_model(tokenizer):
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    return Qwen2ForCausalLM(config)


def trainer(tokenizer, dataset, reward_funcs, tmp_path, **args):
    config = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[], per_device_train_batch_size=2,
                        num_generations=2, max_completion_length=16, logging_steps=1, save_strategy="no",
                        bf16=False, **args)
    return GRPOTrainer(model=tiny_model(tokenizer), reward_funcs=reward_funcs, args=config, train_dataset=dataset,
                       processing_class=tokenizer)


def reward_step(t, rows, tokenizer):
    """TRL's own reward step on these rows and responses (conversational completions)."""
    inputs = [dict(r) for r, _ in rows]
    completions = [[{"role": "assistant", "content": text}] for _, text in rows]
    ids = [tokenizer.encode(text, add_special_tokens=False) for _, text in rows]
    return t._calculate_rewards(inputs, [r["prompt"] for r, _ in rows], completions, ids)


def test_trl_grpo_reward_step_gives_compute_scores_scores(rows, expected, tokenizer, tmp_path):
    data = Dataset.from_list([dict(r) for r, _ in rows])
    t = trainer(tokenizer, data, [arbiter_reward], tmp_path)
    rewards = reward_step(t, rows, tokenizer)
    assert rewards.shape == (len(rows), 1)
    assert rewards[:, 0].tolist() == expected
    assert set(t._pending_extra_logs["arbiter_verdict"]) >= {"AC", "FORMAT_ERROR"}


def test_trl_one_grpo_step_on_cpu_scores_with_arbiter(rows, tokenizer, tmp_path):
    data = Dataset.from_list([dict(r) for r, _ in rows[:2]])
    t = trainer(tokenizer, data, [arbiter_reward], tmp_path, max_steps=1)
    t.train()
    logged = [h for h in t.state.log_history if "rewards/arbiter_reward/mean" in h]
    assert logged and logged[0]["rewards/arbiter_reward/mean"] == 0.0  # an untrained tiny model writes no code


def test_open_r1_code_reward_binding_in_trl(rows, tokenizer, tmp_path):
    """open-r1's get_reward_funcs binds code_reward with its own options; TRL passes the
    verification_info column."""
    r1 = open_r1_rows(rows)
    bound = functools.update_wrapper(functools.partial(code_reward, num_parallel=2, provider_type="e2b"), code_reward)
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": "solve"}], "verification_info": info}
                              for info, _ in r1])
    t = trainer(tokenizer, data, [bound], tmp_path)
    inputs = list(data)
    completions = [[{"role": "assistant", "content": text}] for _, text in r1]
    rewards = t._calculate_rewards(inputs, [i["prompt"] for i in inputs], completions, [[1]] * len(r1))
    want = [compute_score("code", text, ground_truth(info), None)["score"] for info, text in r1]
    assert rewards[:, 0].tolist() == want and 1.0 in want


def test_openrlhf_executor_loads_arbiters_reward_func_and_scores_as_compute_score(rows, expected, tokenizer):
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    executor = SingleTurnAgentExecutor(remote_rm_url=openrlhf_adapter.__file__)
    assert executor.reward_func is not None

    class Engine:  # the vLLM engine's answer: the response's token ids, ended by EOS
        def __init__(self, text):
            self.ids = tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]

        async def generate(self, prompt_ids, params, multi_modal_data=None):
            return SimpleNamespace(outputs=[SimpleNamespace(token_ids=self.ids, finish_reason="stop", logprobs=None)])

    async def one(row, text):
        prompt = tokenizer.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
        params = SimpleNamespace(max_tokens=1 << 20, logprobs=None)
        return await executor.execute(prompt, openrlhf_adapter.label(row), params, 1 << 21, tokenizer, Engine(text))

    outputs = [asyncio.run(one(row, text)) for row, text in rows]
    assert all(o["reward"] is not None for o in outputs), "OpenRLHF swallowed a reward error (it logs and goes on)"
    assert [float(o["scores"]) for o in outputs] == expected
    assert tokenizer.eos_token in tokenizer.decode(outputs[0]["observation_tokens"], skip_special_tokens=False)
