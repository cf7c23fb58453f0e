"""arbiter's trainer adapters held to compute_score on real converted rows, called in each trainer's
own shapes (TRL's columns and conversations, OpenRLHF's decoded query with its end token, open-r1's
verification_info), in-process and through ``url=``. The real TRL trainer's reward step and
OpenRLHF's own reward-function executor: ``test_trainers_real.py`` (in the verl 0.9.1 venv)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from arbiter.datasets.convert import convert
from arbiter.integrations.open_r1 import code_reward, ground_truth, make_code_reward
from arbiter.integrations.openrlhf import label, make_reward_func, reward_func
from arbiter.integrations.trl import arbiter_reward, reward_function
from arbiter.rewards.codegen import InvalidTask
from arbiter.verl.reward import compute_score

WRONG = "print(input())"


def fence(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code}\n```"


def cases(shared, out) -> list[tuple[dict, str]]:
    """(verl row as datasets/pyarrow give it, response): references, wrong programs, no code,
    over APPS (stdin) and LeetCode (call-based, with a prelude) rows."""
    items = []
    for source, rel in {"apps": "coderl_apps", "leetcode": "leetcodedataset/LeetCodeDataset-v0.3.1-test.jsonl.gz"}.items():
        convert(source, shared / "realdata" / rel, out / f"{source}.parquet")
        for row in pq.read_table(out / f"{source}.parquet").to_pylist()[:3]:
            refs = row["extra_info"]["reference_solutions"]
            items += [(row, fence(refs[0]))] if refs else []
            items += [(row, fence(WRONG)), (row, "I cannot solve this.")]
    return items


@pytest.fixture(scope="module")
def items(shared, tmp_path_factory):
    return cases(shared, tmp_path_factory.mktemp("rows"))


@pytest.fixture(scope="module")
def expected(items):
    scores = [compute_score(r["data_source"], text, r["reward_model"]["ground_truth"], r["extra_info"])["score"]
              for r, text in items]
    assert 0.0 in scores and 1.0 in scores
    return scores


def trl_call(fn, items, logged=None):
    """As TRL's GRPOTrainer calls a reward function on a chat dataset: conversations, and every
    column but prompt as a list."""
    return fn(prompts=[r["prompt"] for r, _ in items], completions=[[{"role": "assistant", "content": t}] for _, t in items],
              completion_ids=[[1, 2]] * len(items), data_source=[r["data_source"] for r, _ in items],
              ability=[r["ability"] for r, _ in items], reward_model=[r["reward_model"] for r, _ in items],
              extra_info=[r["extra_info"] for r, _ in items], trainer_state=None,
              log_extra=(lambda column, values: logged.__setitem__(column, values)) if logged is not None else None,
              log_metric=lambda name, value: None)


def test_trl_reward_gives_compute_scores_scores(items, expected):
    logged = {}
    assert trl_call(arbiter_reward, items, logged) == expected
    assert len(logged["arbiter_verdict"]) == len(items) and "AC" in logged["arbiter_verdict"]
    plain = arbiter_reward(prompts=["p"] * len(items), completions=[t for _, t in items],
                           data_source=[r["data_source"] for r, _ in items],
                           reward_model=[r["reward_model"] for r, _ in items],
                           extra_info=[r["extra_info"] for r, _ in items])
    assert plain == expected  # standard (non-chat) completions too


def test_trl_reward_refuses_a_dataset_without_arbiters_columns(items):
    with pytest.raises(ValueError, match="no 'reward_model' column"):
        arbiter_reward(prompts=["p"], completions=["x"], data_source=["apps"])
    with pytest.raises(TypeError, match="unknown option"):
        reward_function(parity_mode="prime_code")


def test_openrlhf_reward_reads_the_decoded_query_with_its_end_token(items, expected):
    prompts = [f"<|im_start|>user\n{r['prompt'][0]['content']}<|im_end|>\n<|im_start|>assistant\n" for r, _ in items]
    queries = [p + text + "<|im_end|>" for p, (_, text) in zip(prompts, items)]
    labels = [label(r) for r, _ in items]
    got = reward_func(queries, prompts, labels)
    assert list(got["scores"]) == expected and list(got["rewards"]) == expected
    one = [reward_func([q], [p], [lab])["scores"][0] for q, p, lab in zip(queries, prompts, labels)]
    assert one == expected  # OpenRLHF calls it with one sample at a time


def test_openrlhf_reward_never_guesses_the_response(items):
    row, text = items[0]
    with pytest.raises(ValueError, match="does not start with prompts"):
        reward_func(["other prompt " + text], ["the prompt"], [label(row)])
    with pytest.raises(ValueError, match="no ground_truth"):
        reward_func(["p" + text], ["p"], [json.dumps({"answer": 3})])


def open_r1_rows(items):
    """The APPS rows as open-r1's verification_info (stdin/stdout test cases)."""
    out = []
    for row, text in items:
        truth = json.loads(row["reward_model"]["ground_truth"])
        if isinstance(truth, dict) and "fn_name" not in truth:
            tests = [{"type": "stdin_stdout", "input": i, "output": o} for i, o in zip(truth["inputs"], truth["outputs"])]
            out.append(({"language": "python", "test_cases": tests}, text))
    return out


def test_open_r1_code_reward_on_verification_info(items):
    rows = open_r1_rows(items)
    want = [compute_score("code", text, ground_truth(info), None)["score"] for info, text in rows]
    assert 1.0 in want and 0.0 in want
    # as open-r1's get_reward_funcs binds it, and TRL calls it
    got = code_reward([[{"role": "assistant", "content": t}] for _, t in rows], num_parallel=2, provider_type="e2b",
                      verification_info=[info for info, _ in rows], prompts=["p"] * len(rows), trainer_state=None)
    assert got == want


def test_open_r1_code_reward_uses_arbiters_columns_when_the_dataset_has_them(items, expected):
    got = code_reward([[{"role": "assistant", "content": t}] for _, t in items],
                      data_source=[r["data_source"] for r, _ in items], reward_model=[r["reward_model"] for r, _ in items],
                      extra_info=[r["extra_info"] for r, _ in items])
    assert got == expected


def test_open_r1_refuses_what_it_cannot_judge():
    with pytest.raises(ValueError, match="is cpp"):
        code_reward(["x"], verification_info=[{"language": "cpp", "test_cases": []}])


def test_adapters_raise_what_compute_score_raises(items):
    row, text = items[0]
    bad = dict(row, reward_model={"style": "rule", "ground_truth": "[]"})
    for call in (lambda: trl_call(arbiter_reward, [(bad, text)]),
                 lambda: reward_func(["p" + text], ["p"], [label(bad)]),
                 lambda: code_reward([text], data_source=["apps"], reward_model=[bad["reward_model"]])):
        with pytest.raises(InvalidTask, match="zero test cases"):
            call()
    zero = make_reward_func(on_invalid="zero")(["p" + text], ["p"], [label(bad)])
    assert list(zero["scores"]) == [0.0]


def test_adapters_through_url_give_the_in_process_scores(items, expected):
    from live_server import LiveServer

    from arbiter.client import shared_client

    server = LiveServer()
    try:
        client = shared_client(server.url)
        assert trl_call(reward_function(url=server.url), items) == expected
        prompts = ["P:"] * len(items)
        got = make_reward_func(url=server.url)([p + t for p, (_, t) in zip(prompts, items)], prompts,
                                               [label(r) for r, _ in items])
        assert list(got["scores"]) == expected
        assert make_code_reward(url=server.url)([t for _, t in items], data_source=[r["data_source"] for r, _ in items],
                                                reward_model=[r["reward_model"] for r, _ in items],
                                                extra_info=[r["extra_info"] for r, _ in items]) == expected
        r, text = items[0]
        assert compute_score(r["data_source"], text, r["reward_model"]["ground_truth"], r["extra_info"],
                             url=server.url)["score"] == expected[0]
        assert shared_client(server.url) is client  # one client of the URL in this process, adapters and compute_score
    finally:
        assert server.stop() == 0
