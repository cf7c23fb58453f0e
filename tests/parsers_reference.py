"""Reference implementations for the parser fuzz tests (``tests/test_parsers.py``).

``fenced_blocks`` / ``extract_code`` below are the regex-based code-block extraction that
``arbiter.rewards.extract`` had before it was made linear (issue 19, item 2): the same rules, written
the simple way (``str.split`` into lines, a regex per line). It is quadratic on some inputs (a long
run of spaces before an inline fence), so the tests only feed it short texts, and check that the
linear implementation gives exactly the same results.
"""

from __future__ import annotations

import re

PYTHON_LABELS = frozenset({"python", "python3", "py", "py3"})

_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")
END_TOKENS = ("<|endoftext|>", "<|im_end|>", "</s>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|end|>",
              "<|return|>", "<\uff5cend\u2581of\u2581sentence\uff5c>", "<eos>", "<end_of_turn>", "<pad>", "<|pad|>")
_TOKENS = "|".join(map(re.escape, END_TOKENS))
_TRAILING = re.compile(r"(?:[ \t\r\n\f\v]|" + _TOKENS + r")*\Z")


def strip_end_tokens(text: str) -> str:
    m = _TRAILING.search(text)
    return text[:m.start()] if re.search(_TOKENS, m.group()) else text


def strip_reasoning(text: str) -> str:
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end():]
    opened = _THINK_OPEN.search(text)
    if opened is not None:
        text = text[: opened.start()]
    return text


def _label_of(info: str) -> str:
    word = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    return word.strip("{}").lstrip(".").lower()


def _dedent(line: str, indent: int) -> str:
    i = 0
    while i < indent and i < len(line) and line[i] in " \t":
        i += 1
    return line[i:]


def _inline_close(lines: list[str], start: int, fence: str, indent: int) -> list[str] | None:
    tail = re.compile(r"(?P<code>.*?)[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
    for k in range(start, len(lines)):
        line = lines[k].rstrip("\r")
        if not line.rstrip(" \t").endswith(fence):
            continue
        m = tail.fullmatch(line)
        if m is None or not m.group("code").strip() or m.group("code").endswith(fence[0]):
            continue
        if any(_FENCE_OPEN.match(later.rstrip("\r")) for later in lines[k + 1:]):
            return None
        return [_dedent(lines[n].rstrip("\r"), indent) for n in range(start, k)] + [_dedent(m.group("code"), indent)]
    return None


def fenced_blocks(text: str) -> tuple[list[tuple[str, str]], bool]:
    blocks: list[tuple[str, str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i].rstrip("\r"))
        if m is None:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info")
        if fence[0] == "`" and "`" in info:
            i += 1
            continue
        indent = len(m.group("indent"))
        closer = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}(?:[ \t][^\n]*|(?:"
                            + _TOKENS + r")[^\n]*)?$")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not closer.match(lines[j].rstrip("\r")):
            body.append(_dedent(lines[j].rstrip("\r"), indent))
            j += 1
        if j >= len(lines):
            inline = _inline_close(lines, i + 1, fence, indent)
            if inline is None:
                return blocks, True
            code = "\n".join(inline)
            blocks.append((_label_of(info), code + "\n" if code else ""))
            return blocks, False
        code = "\n".join(body)
        blocks.append((_label_of(info), code + "\n" if code else ""))
        i = j + 1
    return blocks, False


def extract_code(text: str) -> tuple[str | None, str, int]:
    """``(code, label, blocks)``: the chosen program (``None`` when there is none), its label and
    the number of closed blocks (0 when the answer ends inside an unclosed fence... as counted
    before the unclosed one)."""
    blocks, unclosed = fenced_blocks(strip_reasoning(strip_end_tokens(text)))
    if unclosed or not blocks:
        return None, "", len(blocks)
    python = [b for b in blocks if b[0] in PYTHON_LABELS]
    plain = [b for b in blocks if b[0] == ""]
    chosen = python[-1] if python else plain[-1] if plain else None
    if chosen is None or not chosen[1].strip():
        return None, chosen[0] if chosen else "", len(blocks)
    return chosen[1], chosen[0], len(blocks)


def rewrite_long_int_literals(source: str) -> str:
    """``arbiter.judge.jsonvalues.rewrite_long_int_literals`` before issue 19 (a bounded-repeat
    search, limit x n steps; one copy of the text per rewritten literal)."""
    import io
    import sys
    import tokenize

    from arbiter.checkers.bigint import int_from_decimal

    limit = sys.get_int_max_str_digits()
    if not limit or re.search(r"[0-9_]{%d}" % (limit + 1), source) is None:
        return source
    line_starts = [0]
    for line in io.StringIO(source):
        line_starts.append(line_starts[-1] + len(line))
    edits = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type != tokenize.NUMBER or not re.fullmatch(r"[0-9](?:_?[0-9])*", tok.string):
                continue
            digits = tok.string.replace("_", "")
            if len(digits) <= limit or digits[0] == "0":
                continue
            start = line_starts[tok.start[0] - 1] + tok.start[1]
            end = line_starts[tok.end[0] - 1] + tok.end[1]
            edits.append((start, end, hex(int_from_decimal(digits))))
    except (tokenize.TokenError, SyntaxError):
        return source
    for start, end, text in reversed(edits):
        source = source[:start] + text + source[end:]
    return source
