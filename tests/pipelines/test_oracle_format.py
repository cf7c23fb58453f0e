"""The oracle answer format (card: one <reasoning> block, then one ```cpp fence, nothing else) and
the messages check (card: copy the seed messages exactly, append one assistant message)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from arbiter.datasets.oracle import load_returns, load_seeds
from arbiter.pipelines.oracle.format import (
    FormatCode,
    MessagesCode,
    check_answer,
    check_messages,
    check_return_row,
    parse_answer,
)

REPO = Path(__file__).resolve().parents[2]
CODE = '#include <iostream>\nint main(){std::cout<<"hi\\n";}\n'
GOOD = f"<reasoning>Read once; O(n).</reasoning>\n```cpp\n{CODE}```"


def codes(text: str) -> list[str]:
    return parse_answer(text).codes


# --------------------------------------------------------------------------------------------------
# accepted answers


def test_canonical_answer_parses_to_exact_code_and_reasoning():
    r = parse_answer(GOOD)
    assert r.ok, r.failures
    assert r.code == CODE
    assert r.reasoning == "Read once; O(n)."


@pytest.mark.parametrize(
    "text",
    [
        "\n\n  " + GOOD + "\n\n\t ",  # leading/trailing whitespace
        f"<reasoning>x</reasoning>\n\n\n```cpp   \n{CODE}```   \n",  # spaces after the info string / closer
        f"<reasoning>x</reasoning>\n```cpp\n{CODE}   ```\n",  # closer indented by 3 spaces
        f"<reasoning>x</reasoning>\n```cpp\n{CODE}````\n",  # closer longer than the opener
        f"<reasoning>\nmulti\nline\n</reasoning>\n```cpp\n{CODE}```",
    ],
)
def test_accepted_variants(text):
    r = parse_answer(text)
    assert r.ok, r.failures
    assert r.code == CODE


def test_crlf_line_endings_are_accepted_and_code_is_verbatim():
    crlf_code = CODE.replace("\n", "\r\n")
    text = f"<reasoning>fast</reasoning>\r\n```cpp\r\n{crlf_code}```\r\n"
    r = parse_answer(text)
    assert r.ok, r.failures
    assert r.code == crlf_code


def test_backticks_inside_code_line_do_not_close_the_fence():
    code = 'const char* s = R"(```)";\nint main(){return s[0]==\'`\'?0:1;}\n'
    r = parse_answer(f"<reasoning>x</reasoning>\n```cpp\n{code}```")
    assert r.ok, r.failures
    assert r.code == code


def test_indented_triple_backtick_line_in_raw_string_is_code():
    # four spaces of indentation: not a closing fence (CommonMark), so it stays code
    code = 'const char* s = R"(\n    ```\n)";\nint main(){}\n'
    r = parse_answer(f"<reasoning>x</reasoning>\n```cpp\n{code}```")
    assert r.ok, r.failures
    assert r.code == code


def test_cpp_opener_line_inside_code_is_code_not_a_closer():
    # a closing fence has no info string, so "```cpp" inside the block is content
    code = "// example:\n```cpp\nint main(){}\n"
    r = parse_answer(f"<reasoning>x</reasoning>\n```cpp\n{code}```")
    assert r.ok, r.failures
    assert r.code == code


def test_reasoning_tag_inside_code_comment_is_code():
    code = "// <reasoning>not a tag</reasoning>\nint main(){}\n"
    r = parse_answer(f"<reasoning>why</reasoning>\n```cpp\n{code}```")
    assert r.ok, r.failures
    assert r.code == code


def test_reasoning_may_contain_angle_brackets_and_inline_backticks():
    r = parse_answer(f"<reasoning>use `unordered_set<string>`; a<b && b>c</reasoning>\n```cpp\n{CODE}```")
    assert r.ok, r.failures
    assert r.reasoning == "use `unordered_set<string>`; a<b && b>c"


# --------------------------------------------------------------------------------------------------
# rejected answers: one precise reason each


@pytest.mark.parametrize(
    "text, expected",
    [
        (f"```cpp\n{CODE}```", "MISSING_REASONING"),
        (f"<reasoning>a</reasoning><reasoning>b</reasoning>\n```cpp\n{CODE}```", "MULTIPLE_REASONING"),
        (f"<reasoning>a<reasoning>b</reasoning>\n```cpp\n{CODE}```", "MULTIPLE_REASONING"),
        (f"<reasoning>a\n```cpp\n{CODE}```", "UNCLOSED_REASONING"),
        (f"<reasoning> \n\t </reasoning>\n```cpp\n{CODE}```", "EMPTY_REASONING"),
        (f"<reasoning></reasoning>\n```cpp\n{CODE}```", "EMPTY_REASONING"),
        # (red team: a block that shows nothing, in characters Unicode draws as nothing or as a blank)
        (f"<reasoning>\u200b</reasoning>\n```cpp\n{CODE}```", "EMPTY_REASONING"),
        (f"<reasoning>\u00a0\u3000\u2060</reasoning>\n```cpp\n{CODE}```", "EMPTY_REASONING"),
        (f"```cpp\n{CODE}```\n<reasoning>late</reasoning>", "REASONING_AFTER_CODE"),
        (f"<reasoning>see ```cpp int x; ``` </reasoning>\n```cpp\n{CODE}```", "FENCE_IN_REASONING"),
        (f"Sure!\n<reasoning>x</reasoning>\n```cpp\n{CODE}```", "TEXT_OUTSIDE"),
        (f"<reasoning>x</reasoning>\nHere it is:\n```cpp\n{CODE}```", "TEXT_OUTSIDE"),
        (f"<reasoning>x</reasoning>\n```cpp\n{CODE}```\nHope this helps!", "TEXT_OUTSIDE"),
        ("<reasoning>x</reasoning>\nint main(){}", "NO_FENCE"),
        (f"<reasoning>x</reasoning>\n```cpp\n{CODE}```\n```cpp\n{CODE}```", "MULTIPLE_FENCES"),
        (f"<reasoning>x</reasoning>\n```cpp\n{CODE}```\n```\nexample output\n```", "MULTIPLE_FENCES"),
        (f"<reasoning>x</reasoning>\n```c++\n{CODE}```", "WRONG_FENCE_LANGUAGE"),
        (f"<reasoning>x</reasoning>\n```C++\n{CODE}```", "WRONG_FENCE_LANGUAGE"),
        (f"<reasoning>x</reasoning>\n```CPP\n{CODE}```", "WRONG_FENCE_LANGUAGE"),
        (f"<reasoning>x</reasoning>\n```cxx\n{CODE}```", "WRONG_FENCE_LANGUAGE"),
        (f"<reasoning>x</reasoning>\n```python\nprint(1)\n```", "WRONG_FENCE_LANGUAGE"),
        (f"<reasoning>x</reasoning>\n```\n{CODE}```", "WRONG_FENCE_LANGUAGE"),
        (f"<reasoning>x</reasoning>\n```cpp17\n{CODE}```", "WRONG_FENCE_LANGUAGE"),
        (f"<reasoning>x</reasoning>\n````cpp\n{CODE}````", "MALFORMED_FENCE"),
        (f"<reasoning>x</reasoning>\n~~~cpp\n{CODE}~~~", "MALFORMED_FENCE"),
        (f"<reasoning>x</reasoning>\n```cpp title=main.cpp\n{CODE}```", "MALFORMED_FENCE"),
        ("<reasoning>x</reasoning>\n```cpp int main(){}```", "MALFORMED_FENCE"),
        (f"<reasoning>x</reasoning>```cpp\n{CODE}```", "MALFORMED_FENCE"),  # not a fence for CommonMark
        (f"<reasoning>x</reasoning>\n  ```cpp\n{CODE}```", "MALFORMED_FENCE"),  # CommonMark strips 2 spaces per line
        (f"<reasoning>x</reasoning>\n    ```cpp\n{CODE}```", "MALFORMED_FENCE"),  # an indented code block
        (f"<reasoning>x</reasoning>\n```cpp\n{CODE}", "UNCLOSED_FENCE"),
        (f"<reasoning>x</reasoning>\n```cpp\nint main(){{return 0;}}```", "UNCLOSED_FENCE"),
        ("<reasoning>x</reasoning>\n```cpp", "UNCLOSED_FENCE"),
        ("<reasoning>x</reasoning>\n```cpp\n```", "EMPTY_CODE"),
        ("<reasoning>x</reasoning>\n```cpp\n \n\t\n```", "EMPTY_CODE"),
        ("", "MISSING_REASONING"),
        ("   \n  ", "MISSING_REASONING"),
    ],
)
def test_rejections_name_the_first_reason(text, expected):
    r = parse_answer(text)
    assert not r.ok
    assert r.codes[0] == expected, r.failures
    assert len(r.codes) == len(set(r.codes))
    assert all(f.message and f.stage == "format" for f in r.failures)


def test_missing_reasoning_explains_tag_only_inside_code():
    r = parse_answer("```cpp\n// <reasoning>x</reasoning>\nint main(){}\n```")
    assert r.codes == ["MISSING_REASONING"]
    assert "only inside the code block" in r.failures[0].message


def test_stray_closing_tag_is_missing_reasoning_plus_text_outside():
    r = parse_answer(f"I thought about it.</reasoning>\n```cpp\n{CODE}```")
    assert r.codes == ["MISSING_REASONING", "TEXT_OUTSIDE"]
    assert "without its opening tag" in r.failures[0].message


def test_line_that_is_exactly_a_fence_inside_raw_string_closes_the_block():
    # CommonMark: a line of ``` closes the fence even inside a raw string; the rest is stray text
    text = '<reasoning>x</reasoning>\n```cpp\nconst char* s = R"(\n```\n)";\nint main(){}\n```'
    r = parse_answer(text)
    assert not r.ok
    assert "TEXT_OUTSIDE" in r.codes or "MULTIPLE_FENCES" in r.codes


def test_every_applicable_reason_is_reported_once():
    text = f"Intro\n```python\nprint(1)\n```\n<reasoning></reasoning>\nBye"
    r = parse_answer(text)
    assert set(r.codes) >= {"REASONING_AFTER_CODE", "EMPTY_REASONING", "TEXT_OUTSIDE", "WRONG_FENCE_LANGUAGE"}
    assert len(r.codes) == len(set(r.codes))


def test_non_ascii_whitespace_outside_is_text():
    for junk in ("\ufeff", "\u00a0", "\u200b"):
        r = parse_answer(junk + GOOD)
        assert r.codes == ["TEXT_OUTSIDE"], (repr(junk), r.failures)


def test_tags_are_case_sensitive():
    r = parse_answer(f"<Reasoning>x</Reasoning>\n```cpp\n{CODE}```")
    assert r.codes[0] == "MISSING_REASONING"
    assert "TEXT_OUTSIDE" in r.codes


def test_lone_cr_is_not_a_line_break():
    r = parse_answer("<reasoning>x</reasoning>\r```cpp\rint main(){}\r```")
    assert not r.ok
    assert r.codes[0] == "MALFORMED_FENCE"


def test_failure_path_and_message_are_usable():
    r = parse_answer(f"<reasoning>x</reasoning>\n```c++\n{CODE}```", path="$.messages[2].content")
    f = r.failures[0]
    assert f.code is FormatCode.WRONG_FENCE_LANGUAGE
    assert f.path == "$.messages[2].content"
    assert "```c++" in f.message and "```cpp" in f.message
    assert f.to_dict() == {"stage": "format", "code": "WRONG_FENCE_LANGUAGE", "message": f.message,
                           "path": "$.messages[2].content"}


def test_huge_answer_parses_in_linear_time():
    # 200k lines of code: the tokenizer must not be quadratic (no assertion on time: it must finish)
    code = "int x;\n" * 200_000
    r = parse_answer(f"<reasoning>x</reasoning>\n```cpp\n{code}```")
    assert r.ok and r.code == code
    r = parse_answer("<reasoning>x</reasoning>\n" + "text ``` \n" * 50_000)
    assert not r.ok
    # alternating stray text and fences: many tokens, each must not rescan the rest of the text
    r = parse_answer("<reasoning>x</reasoning>\n" + "a\n```\nb\n```\n" * 50_000)
    assert r.codes[:2] == ["MULTIPLE_FENCES", "TEXT_OUTSIDE"]
    r = parse_answer("x<reasoning>a</reasoning>" * 50_000 + "\n```cpp\nint main(){}\n```")
    assert r.codes == ["MULTIPLE_REASONING", "TEXT_OUTSIDE"]
    assert all(len(f.message) < 300 for f in r.failures)


def test_non_string_content_is_rejected_not_raised():
    assert not parse_answer(None).ok  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# messages check


SEED_MSGS = [{"role": "system", "content": "Be fast."}, {"role": "user", "content": "Optimize:\n```cpp\nX\n```\n"}]


def with_answer(msgs, answer=GOOD):
    return copy.deepcopy(msgs) + [{"role": "assistant", "content": answer}]


def test_exact_copy_plus_one_assistant_passes():
    assert check_messages(with_answer(SEED_MSGS), SEED_MSGS) == []
    res = check_answer(with_answer(SEED_MSGS), SEED_MSGS)
    assert res.ok and res.code == CODE


@pytest.mark.parametrize(
    "mutate, expected, path",
    [
        (lambda m: m.__setitem__(0, {"role": "system", "content": "Be faster."}), "CONTENT_ALTERED", "$.messages[0].content"),
        (lambda m: m[1].__setitem__("content", m[1]["content"].rstrip("\n")), "CONTENT_ALTERED", "$.messages[1].content"),
        (lambda m: m[1].__setitem__("content", m[1]["content"].replace("\n", "\r\n")), "CONTENT_ALTERED", "$.messages[1].content"),
        (lambda m: m[0].__setitem__("role", "user"), "ROLE_CHANGED", "$.messages[0].role"),
        (lambda m: m.pop(2), "MISSING_ASSISTANT", "$.messages"),
        (lambda m: m.append({"role": "assistant", "content": GOOD}), "MULTIPLE_ASSISTANT", "$.messages"),
        (lambda m: m.append({"role": "user", "content": "thanks"}), "ASSISTANT_NOT_LAST", "$.messages[2]"),
        (lambda m: m.pop(0), "MISSING_MESSAGES", "$.messages"),
        (lambda m: m.insert(0, {"role": "system", "content": "extra"}), "EXTRA_MESSAGES", "$.messages"),
        (lambda m: m[2].__setitem__("name", "oracle"), "EXTRA_FIELDS", "$.messages[2]"),
        (lambda m: m[0].__setitem__("role", "assistant"), "MULTIPLE_ASSISTANT", "$.messages"),
    ],
)
def test_messages_failures(mutate, expected, path):
    msgs = with_answer(SEED_MSGS)
    mutate(msgs)
    fails = check_messages(msgs, SEED_MSGS)
    assert fails, msgs
    assert fails[0].code.value == expected, fails
    assert fails[0].path == path
    assert fails[0].stage == "messages"


def test_altered_content_names_the_first_difference():
    msgs = with_answer(SEED_MSGS)
    msgs[1]["content"] = msgs[1]["content"].rstrip("\n")
    f = check_messages(msgs, SEED_MSGS)[0]
    assert f.code is MessagesCode.CONTENT_ALTERED
    assert "end of text" in f.message and "'\\n'" in f.message


def test_assistant_not_last_still_checks_the_prompt_exactly():
    msgs = copy.deepcopy(SEED_MSGS)
    msgs.insert(1, {"role": "assistant", "content": GOOD})
    fails = check_messages(msgs, SEED_MSGS)
    assert [f.code.value for f in fails] == ["ASSISTANT_NOT_LAST"]


def test_check_answer_reports_both_stages():
    msgs = with_answer(SEED_MSGS, answer=f"```cpp\n{CODE}```")
    msgs[0]["content"] = "changed"
    res = check_answer(msgs, SEED_MSGS)
    assert not res.ok
    assert res.codes == ["CONTENT_ALTERED", "MISSING_REASONING"]
    assert res.stage == "messages"


def test_shipped_demo_rows_get_their_documented_format_and_messages_outcome():
    seeds = load_seeds(REPO / "data/oracle/seeds.jsonl").by_id
    loaded = load_returns(REPO / "data/oracle/returns.jsonl", seeds)
    expected = {
        "fmt-missing-reasoning": "MISSING_REASONING",
        "fmt-fence-cxx": "WRONG_FENCE_LANGUAGE",
        "fmt-text-after-code": "TEXT_OUTSIDE",
        "fmt-two-fences": "MULTIPLE_FENCES",
        "fmt-unclosed-fence": "UNCLOSED_FENCE",
        "fmt-reasoning-after-code": "REASONING_AFTER_CODE",
        "fmt-bare-fence": "WRONG_FENCE_LANGUAGE",
        "fmt-prose-before": "TEXT_OUTSIDE",
        "fmt-empty-reasoning": "EMPTY_REASONING",
        "fmt-empty-code": "EMPTY_CODE",
        "msg-system-altered": "CONTENT_ALTERED",
        "msg-user-altered-trailing-newline": "CONTENT_ALTERED",
        "msg-two-assistant": "MULTIPLE_ASSISTANT",
        "msg-role-changed": "ROLE_CHANGED",
        "msg-missing-assistant": "MISSING_ASSISTANT",
    }
    seen = set()
    for row in loaded.rows:
        demo = row.raw["demo_id"]
        res = check_return_row(row, seeds[row.task_id])
        if demo in expected:
            assert res.codes == [expected[demo]], (demo, res.failures)
        else:  # correct answers and rows that fail later (compile, tests, speed) parse fine
            assert res.ok, (demo, res.failures)
            assert "int main" in res.code
        seen.add(demo)
    assert set(expected) <= seen


def test_return_example_from_the_card_is_accepted(shared):
    seed = {json.loads(l)["task_id"]: json.loads(l) for l in (shared / "seed/data/oracle_seed.jsonl").open()}
    ex = json.loads((shared / "seed/data/oracle_return_example.jsonl").read_text().splitlines()[0])
    res = check_answer(ex["messages"], seed[ex["task_id"]]["messages"])
    assert res.ok, res.failures
    assert res.code.startswith("#include <iostream>") and res.code.endswith("return 0;}\n")
    assert "single pass in disguise" in res.reasoning


# --------------------------------------------------------------------------------------------------
# what readers see (issue 19, items 10-13): the answers below were accepted before, with another
# program hidden from the grammar; each is refused now with its own reason


EVIL = 'int main(){puts("another program");}'


def test_tilde_fence_in_reasoning_is_refused():
    # item 10: a Markdown reader sees two cpp blocks, the first one a different program
    text = f"<reasoning>Plan:\n~~~cpp\n{EVIL}\n~~~\n</reasoning>\n```cpp\n{CODE}```"
    r = parse_answer(text)
    assert r.codes == ["TILDE_FENCE_IN_REASONING"], r.failures
    assert f"offset {text.index('~~~')}" in r.failures[0].message
    # a ~~~ fence opens inside a list item or a quote too
    for lead in ("- ", "> ", "1. "):
        r = parse_answer(f"<reasoning>Plan:\n{lead}~~~\n{EVIL}\n</reasoning>\n```cpp\n{CODE}```")
        assert r.codes == ["TILDE_FENCE_IN_REASONING"], (lead, r.failures)


def test_lone_cr_in_the_code_is_refused():
    # item 11, the answer: CommonMark and g++ break lines at a lone \r, so a reader sees
    # two fences with prose between them
    code = "/*\r```\rprose\r```cpp\r*/\n" + CODE
    text = f"<reasoning>x</reasoning>\n```cpp\n{code}```"
    r = parse_answer(text)
    assert r.codes == ["LONE_CR"], r.failures
    assert f"offset {text.index(chr(13))}" in r.failures[0].message and "in the code" in r.failures[0].message
    # CRLF stays accepted; a lone \r in the reasoning is refused as well
    assert parse_answer(GOOD.replace("\n", "\r\n")).ok
    assert parse_answer(f"<reasoning>a\rb</reasoning>\n```cpp\n{CODE}```").codes == ["LONE_CR"]
    assert parse_answer(GOOD.replace("\n", "\r\n") + "\r").codes == ["LONE_CR"]


def test_indented_code_block_in_reasoning_is_refused():
    # item 12: after a blank line, 4 spaces (or a tab) make an indented code block
    for indent in ("    ", "\t", "  \t", "      "):
        text = f"<reasoning>Plan:\n\n{indent}{EVIL}\n</reasoning>\n```cpp\n{CODE}```"
        r = parse_answer(text)
        assert r.codes == ["INDENTED_CODE_IN_REASONING"], (repr(indent), r.failures)
    # indented prose that continues a paragraph is not code, and 3 spaces never are
    assert parse_answer(f"<reasoning>Plan:\n    continued\n\n   three\n</reasoning>\n```cpp\n{CODE}```").ok


def test_an_indented_first_line_after_the_tag_is_prose():
    # The tag alone on its line, then an indented line: CommonMark reads it into the tag's paragraph (raw HTML as
    # text) or the tag's HTML block (raw HTML rendered), never as code; it was refused as indented code. After a
    # blank line it is code, in both.
    for indent in ("    ", "\t", "        "):
        text = f"<reasoning>\n{indent}We read the input once: O(n).\n</reasoning>\n```cpp\n{CODE}```"
        assert parse_answer(text).ok, (repr(indent), parse_answer(text).failures)
        blank_first = text.replace("<reasoning>\n", "<reasoning>\n\n", 1)
        assert parse_answer(blank_first).codes == ["INDENTED_CODE_IN_REASONING"], repr(indent)


def test_commonmark_finds_indented_code_the_own_rule_does_not_see():
    # after a heading (no blank line) CommonMark starts an indented code block; the grammar's own rule
    # only looks after blank lines, the CommonMark parse finds it
    r = parse_answer(f"<reasoning>Plan\n# Steps\n    {EVIL}\n</reasoning>\n```cpp\n{CODE}```")
    assert r.codes == ["INDENTED_CODE_IN_REASONING"], r.failures
    assert "CommonMark reader" in r.failures[0].message
    # an HTML comment ends an HTML block on its line for a renderer that passes raw HTML (GitHub-like):
    # the next indented line is code there, and only there
    r = parse_answer(f"<reasoning>Plan\n<!-- note -->\n    {EVIL}\n</reasoning>\n```cpp\n{CODE}```")
    assert r.codes == ["INDENTED_CODE_IN_REASONING"], r.failures
    assert "raw HTML" in r.failures[0].message


@pytest.mark.parametrize(
    "code, expected, first",
    [
        # item 13: Trojan Source (CVE-2021-42574): RLO ... PDF inside a comment, LRI/PDI in a string
        ('int main(){ bool admin = false;\n/*\u202e } \u2066if (admin)\u2069 \u2066 begin admins only */\nreturn 0;}\n',
         "BIDI_CONTROL", "\u202e"),
        ('int main(){ const char* s = "user\u2067\u2066// check\u2069\u2068";}\n', "BIDI_CONTROL", "\u2067"),
        ("int main(){return 0;}\n\0int hidden;\n", "NUL_CHARACTER", "\0"),
    ],
)
def test_bidi_controls_and_nul_are_refused(code, expected, first):
    text = f"<reasoning>x</reasoning>\n```cpp\n{code}```"
    r = parse_answer(text)
    assert r.codes == [expected], r.failures
    assert f"at offset {text.index(first)} (in the code" in r.failures[0].message


def test_bidi_controls_in_the_reasoning_are_refused_too():
    for ch in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
        r = parse_answer(f"<reasoning>fast {ch}path</reasoning>\n```cpp\n{CODE}```")
        assert r.codes == ["BIDI_CONTROL"], (hex(ord(ch)), r.failures)
        assert f"U+{ord(ch):04X}" in r.failures[0].message and "outside the code" in r.failures[0].message
    # other non-ASCII text in the reasoning and in the code stays accepted
    assert parse_answer(f"<reasoning>O(n) — schnell, 快</reasoning>\n```cpp\n// é\n{CODE}```").ok


def test_commonmark_disagreement_is_markdown_mismatch():
    # the backstop: a parse the CommonMark reader does not share (here: a code string that is not the
    # block's content) is MARKDOWN_MISMATCH
    from arbiter.pipelines.oracle.markdown import commonmark_problems

    start = GOOD.index("```cpp")
    assert commonmark_problems(GOOD, CODE, start) == []
    found = commonmark_problems(GOOD, CODE.replace("hi", "ho"), start)
    assert [c for c, _ in found] == ["MARKDOWN_MISMATCH"]
    assert f"first difference at {CODE.index('hi') + 1}" in found[0][1]
    found = commonmark_problems(GOOD, CODE, start - 1)
    assert [c for c, _ in found] == ["MARKDOWN_MISMATCH"] and "no code block starting on line 1" in found[0][1]


def test_every_accepted_answer_is_one_cpp_block_for_commonmark():
    # all combinations of small reasoning and code fragments: whenever the grammar accepts, a CommonMark
    # reader (raw HTML as text, and rendered) sees exactly that one block with exactly that code
    import itertools

    from markdown_it import MarkdownIt

    reasoning = ["x", "\nmulti\n", "a\n\n    b", "a\n- ~~~", "a\n<!-- c -->\n    b", "a\r\nb", "a\rb", "a ``` b",
                 "# h\n    b", "a\n\n   b", "\u202e"]
    sep = ["\n", "\r\n", "", "\n\n", "\n  "]
    code = ["int main(){}\n", "int a;\n\n    int b;\n", "/*\r```\r*/\n", "~~~\nx\n~~~\n", "  ```\n", "\0\n",
            "int a;\r\n\r\n    b;\r\n", "x = \u2066;\n"]
    closer = ["```", "````", "   ```", "```\n\n", "``` \n"]
    md_text = MarkdownIt("commonmark", {"html": False})
    md_html = MarkdownIt("commonmark", {"html": True})
    accepted = 0
    for r_, s_, c_, k_ in itertools.product(reasoning, sep, code, closer):
        text = f"<reasoning>{r_}</reasoning>{s_}```cpp\n{c_}{k_}"
        res = parse_answer(text)
        if not res.ok:
            assert res.failures
            continue
        accepted += 1
        blocks = [t for t in md_text.parse(text) if t.type in ("fence", "code_block")]
        assert len(blocks) == 1 and blocks[0].info.strip() == "cpp", text
        assert blocks[0].content == res.code.replace("\r\n", "\n"), text
        fence_line = blocks[0].map[0]
        assert not [t for t in md_html.parse(text) if t.type in ("fence", "code_block") and t.map[0] < fence_line]
        assert "\0" not in text and not any(ch in text for ch in "\u061c\u200e\u200f\u202a\u202e\u2066\u2069")
    assert accepted >= 30  # the combinations include plenty of good answers


# --------------------------------------------------------------------------------------------------
# what g++ compiles must be what a reader sees: spliced // comments, homoglyph identifiers, Unicode line breaks


def _answer(code: str) -> str:
    return f"<reasoning>Prefix sums, O(n + q).</reasoning>\n```cpp\n{code}```"


@pytest.mark.parametrize("code, expected", [
    ("int main(){ long long ans = 0; // add the bonus \\\n    ans += 1000000;\n}\n", "SPLICED_LINE_COMMENT"),
    ("int main(){ long long ans = 0; // trailing blanks after the backslash \\  \r\n ans += 1;\n}\n",
     "SPLICED_LINE_COMMENT"),
    ("int main(){ int ans = 0, \u0430ns = 1; return ans; }\n", "CONFUSABLE_IDENTIFIER"),  # Cyrillic a, mixed
    ("int main(){ int a = 0; int \u0430 = 1; return a; }\n", "CONFUSABLE_IDENTIFIER"),  # whole-script look-alike
    ("int main(){ int \u0456f = 2; return \u0456f; }\n", "CONFUSABLE_IDENTIFIER"),
    # (red team: invisible characters g++ keeps in a name, two variables that read as one)
    ("int main(){ int ans = 0, ans\u3164 = 1; return ans; }\n", "CONFUSABLE_IDENTIFIER"),  # Hangul filler
    ("int main(){ int ans = 0, ans\ufe0f = 1; return ans; }\n", "CONFUSABLE_IDENTIFIER"),  # variation selector
    ("int main(){ int ans = 0, ans\u034f = 1; return ans; }\n", "CONFUSABLE_IDENTIFIER"),  # grapheme joiner
    ("int main(){ int ans = 0, ans\U000e0100 = 1; return ans; }\n", "CONFUSABLE_IDENTIFIER"),
    ("int main(){ int ans = 0, ans\uffa0 = 1; return ans; }\n", "CONFUSABLE_IDENTIFIER"),
    ("int main(){ int ans = 0; // note\u2028 ans += 1;\n return ans; }\n", "UNICODE_LINE_SEPARATOR"),
    ("int main(){ int ans = 0; // note\u2029 ans += 1;\n return ans; }\n", "UNICODE_LINE_SEPARATOR"),
    ("int main(){ int ans = 0; // note\x85 ans += 1;\n return ans; }\n", "NEL_CHARACTER"),
])
def test_code_a_reader_reads_otherwise_than_gcc_is_refused(code, expected):
    assert parse_answer(_answer(code)).codes == [expected]


@pytest.mark.parametrize("code", [
    '#define ADD(a, b) \\\n    ((a) + (b))\nint main(){ return ADD(1, 2); }\n',  # a macro's splice is code
    'int main(){ const char* s = "// not a comment \\\n still the string"; return s[0]; }\n',
    'int main(){ auto s = R"x(// raw \\\n text)x"; /* block // \\\n */ return s[0]; }\n',
    'int main(){ long x = 1\'000\'000; char q = \'\\\'\'; return x + q; }\n',  # digit separators, escaped quote
    "int main(){ int \u0441\u0447\u0451\u0442 = 0; /* \u0441 \u0441\u0447\u0451\u0442 */ int c = 1; // \u0441\n"
    "  const char* t = \"\u0441\"; return c + \u0441\u0447\u0451\u0442; }\n",  # a Cyrillic name, Cyrillic text
    "int main(){ int l = 0, I = 1, rn = 2, m = 3; return l + I + rn + m; } // r\u00e9sum\u00e9 \u8a08\u7b97\n",
    "int main(){ int r\u00e9sum\u00e9 = 1, \u8a08\u7b97 = 2; return r\u00e9sum\u00e9 + \u8a08\u7b97; }\n",
    'int main(){ const char* s = "\u2764\ufe0f"; return s[0]; } // \U0001f468\u200d\U0001f469\n',  # text only
])
def test_code_readers_and_gcc_read_alike_is_accepted(code):
    r = parse_answer(_answer(code))
    assert r.ok, r.failures


def test_cpp_scan_finishes_on_adversarial_code():
    # 1 MiB of shapes that would make a backtracking scanner quadratic (no assertion on time: it must finish;
    # bench/oracle_format.py prints the times at 64 KiB and 1 MiB side by side)
    from arbiter.pipelines.oracle.cpp_text import code_problems

    mib = 1 << 20
    assert code_problems('R"' * (mib // 2)) == []
    assert code_problems("'" * mib) == [] and code_problems('"\\' * (mib // 2)) == []
    assert code_problems('R"x(' + ')"y' * (mib // 3)) == []
    assert [c for c, _ in code_problems("//\\\n" * (mib // 4))] == ["SPLICED_LINE_COMMENT"]
    assert [c for c, _ in code_problems("\u0430b ab " * (mib // 6))] == ["CONFUSABLE_IDENTIFIER"]
