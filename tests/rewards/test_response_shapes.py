"""The shapes in which real trainers hand a response to the reward, each decided on purpose
(docs/codegen.md, "Code extraction": "Shapes trainers produce"), one test per shape, judged for real.

OpenRLHF decodes without ``skip_special_tokens``, so its responses end in the template's end token;
verl and TRL strip them. The same response must score the same either way."""

from __future__ import annotations

import json

import pytest

from arbiter.rewards.extract import END_TOKENS, extract_code
from arbiter.verl.reward import compute_score

SUM = json.dumps({"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]})
CODE = "a, b = map(int, input().split())\nprint(a + b)"
BLOCK = f"Here you go.\n\n```python\n{CODE}\n```"


def verdict(response: str) -> tuple[float, str]:
    r = compute_score("code_taco", response, SUM, {"index": 0})
    return r["score"], r["verdict"]


@pytest.mark.parametrize("token", END_TOKENS)
def test_an_end_token_glued_to_the_closing_fence_is_dropped(token):
    """OpenRLHF's shape: ```` ```<|endoftext|> ```` (was FORMAT_ERROR: 2 of 3 accepted rollouts lost)."""
    assert verdict(BLOCK + token) == (1.0, "AC")


@pytest.mark.parametrize("token", ["<|im_end|>", "</s>", "<|eot_id|>"])
def test_an_end_token_on_its_own_line_after_the_fence(token):
    assert verdict(BLOCK + "\n" + token + "\n") == (1.0, "AC")


def test_several_end_and_padding_tokens_with_whitespace_are_dropped():
    assert verdict(BLOCK + "<|im_end|>\n<|endoftext|><pad><pad> \n") == (1.0, "AC")


def test_the_same_response_with_or_without_its_end_token_scores_the_same():
    for response in (BLOCK, BLOCK.replace("```\n", "``` and that is all\n"), f"```python\n{CODE}",
                     "no code at all", f"```python\n{CODE}\n```\n```python\nprint(0)"):
        assert verdict(response + "<|im_end|>") == verdict(response), response


def test_an_end_token_mid_text_closes_the_fence_it_follows():
    """A transcript that goes on after the end token (a multi-turn decode): the fence closes there."""
    text = f"```python\n{CODE}\n```<|im_end|>\n<|im_start|>user\nthanks"
    assert extract_code(text).code == CODE + "\n"
    assert verdict(text) == (1.0, "AC")


def test_a_closing_fence_followed_by_text_after_a_space_closes_the_block():
    """```` ``` Hope this helps! ```` closes (CommonMark would not: the block would run to the end)."""
    assert verdict(f"```python\n{CODE}\n``` Hope this helps!") == (1.0, "AC")
    two = f"```python\nprint(0)\n``` and the final version:\n```python\n{CODE}\n```"
    assert extract_code(two).code == CODE + "\n" and extract_code(two).blocks == 2


def test_a_fence_glued_to_a_word_does_not_close():
    """```` ```Hope ```` reads as an opening fence with an info string (```` ```python ````), never a
    close: the block stays open, and a response ending so is unclosed (FORMAT_ERROR)."""
    score, kind = verdict(f"```python\n{CODE}\n```Hope this helps")
    assert (score, kind) == (0.0, "FORMAT_ERROR")


def test_a_response_cut_at_max_length_inside_the_fence_is_format_error():
    cut = f"```python\n{CODE[:20]}"
    assert verdict(cut) == (0.0, "FORMAT_ERROR")
    assert "unclosed code block" in compute_score("code_taco", cut, SUM)["reason"]


def test_a_cut_response_with_an_earlier_closed_draft_is_still_format_error():
    """The closed block before the cut is a draft; the final answer never came."""
    assert verdict(f"{BLOCK}\nA faster version:\n```python\n{CODE[:15]}") == (0.0, "FORMAT_ERROR")


def test_code_ended_by_an_end_token_with_no_closing_fence_is_format_error():
    """As without the token (what verl and TRL hand over): no closing fence, no program."""
    assert verdict(f"```python\n{CODE}<|im_end|>") == verdict(f"```python\n{CODE}") == (0.0, "FORMAT_ERROR")


def test_an_inline_closing_fence_before_an_end_token():
    assert verdict(f"```python\n{CODE}```<|eot_id|>") == (1.0, "AC")


def test_end_tokens_inside_the_code_are_code():
    code = "s = '</s><|im_end|>'\na, b = map(int, input().split())\nprint(a + b)"
    assert extract_code(f"```python\n{code}\n```</s>").code == code + "\n"
