"""Code-block extraction: a model's markdown response -> the Python program to judge.

Trailing end-of-sequence tokens are dropped; think blocks are dropped; fences are line-based
(CommonMark, plus an inline closing fence at the end of the answer, and a closing fence may carry
text after a space or an end token); the last Python-labelled block wins, else the last unlabelled
one; no program is ``FORMAT_ERROR``; responses over :data:`MAX_RESPONSE_CHARS` are not parsed.
Linear time in the response. The rules and their reasons: ``docs/codegen.md`` ("Code extraction").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

PYTHON_LABELS = frozenset({"python", "python3", "py", "py3"})
#: Responses longer than this (characters) are not parsed: FORMAT_ERROR (rule 5).
MAX_RESPONSE_CHARS = 4 * 1024 * 1024

# literal patterns only (IGNORECASE): one pass, no backtracking
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_MAX_LABELS_SHOWN = 10
#: End-of-sequence and padding tokens of the common chat templates, which a trainer that decodes
#: without ``skip_special_tokens`` leaves in the response (OpenRLHF). Trailing ones are dropped
#: before parsing (rule 0), and one right after a fence makes that line a closing fence (rule 2).
END_TOKENS = ("<|endoftext|>", "<|im_end|>", "</s>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|end|>",
              "<|return|>", "<\uff5cend\u2581of\u2581sentence\uff5c>", "<eos>", "<end_of_turn>", "<pad>", "<|pad|>")
_SPACE = " \t\r\n\f\v"


@dataclass(frozen=True)
class Extraction:
    """The result of :func:`extract_code`.

    - ``code``: the program text, or ``None`` when the response holds no usable program.
    - ``reason``: why there is no program (empty when ``code`` is set), one line a human can act on.
    - ``label``: the chosen block's language label (``""`` for an unlabelled block).
    - ``blocks``: how many closed fenced blocks the answer part holds (all labels).
    """

    code: str | None
    reason: str = ""
    label: str = ""
    blocks: int = 0

    @property
    def ok(self) -> bool:
        """True when a program was found."""
        return self.code is not None


def strip_end_tokens(text: str) -> str:
    """``text`` without the end-of-sequence tokens (:data:`END_TOKENS`) it ends with, nor the
    whitespace around them (rule 0, docs/codegen.md); unchanged when it ends with none. Each
    character is looked at a bounded number of times."""
    end = cut = len(text)
    while True:
        while end and text[end - 1] in _SPACE:
            end -= 1
        token = next((t for t in END_TOKENS if text.endswith(t, 0, end)), None)
        if token is None:
            return text if cut == len(text) else text[:cut]
        end -= len(token)
        while end and text[end - 1] in _SPACE:
            end -= 1
        cut = end


def strip_reasoning(text: str) -> str:
    """The answer part of a response: the text after the last ``</think>``, cut at a later
    ``<think>`` that is never closed (rule 1, docs/codegen.md)."""
    last = None
    for last in _THINK_CLOSE.finditer(text):
        pass
    if last is not None:
        text = text[last.end():]
    opened = _THINK_OPEN.search(text)
    if opened is not None:
        text = text[: opened.start()]
    return text


def _label_of(info: str) -> str:
    word = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    word = word.strip("{}").lstrip(".").lower()
    return word


def _dedent(line: str, indent: int) -> str:
    lead = len(line) - len(line.lstrip(" \t"))
    return line[min(lead, indent):]


def _fence_line(line: str) -> tuple[int, str, str] | None:
    """``(indent, fence, info)`` when ``line`` (no ``\\n``, trailing ``\\r`` removed) is
    indentation, three or more backticks or tildes, then anything; else ``None``."""
    rest = line.lstrip(" \t")
    char = rest[:1]
    if char not in ("`", "~"):
        return None
    after = rest.lstrip(char)
    run = len(rest) - len(after)
    if run < 3:
        return None
    return len(line) - len(rest), char * run, after


def _is_closer(line: str, fence: str) -> bool:
    """A closing line of ``fence``: spaces/tabs, at least ``len(fence)`` fence characters, then
    nothing, or text after a space or tab, or an end token (rule 2's closing-line text)."""
    core = line.strip(" \t")
    rest = core.lstrip(fence[0])
    return len(core) - len(rest) >= len(fence) and (not rest or rest[0] in " \t" or rest.startswith(END_TOKENS))


def _inline_code(line: str, fence: str) -> str | None:
    """Rule 2's inline exception: the code part of a line that ends with ``fence`` (at least as
    many of its character, spaces before it dropped), or ``None`` when the line does not qualify
    (no such ending, no code before it, or code ending with the fence character)."""
    body = line.rstrip(" \t")
    code = body.rstrip(fence[0])
    if len(body) - len(code) < len(fence):
        return None
    code = code.rstrip(" \t")
    if not code.strip() or code.endswith(fence[0]):
        return None
    return code


def _fence_lines(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of every line of ``text`` that holds ```` ``` ```` or ``~~~`` (``end`` at
    its ``\\n`` or the end of the text), in order. Each character is looked at a bounded number
    of times: the next occurrence of each marker is searched for only once it has been passed."""
    n = len(text)
    pos = 0  # always the start of a line
    nb = nt = -2
    while pos <= n:
        if -1 < nb < pos or nb == -2:
            nb = text.find("```", pos)
        if -1 < nt < pos or nt == -2:
            nt = text.find("~~~", pos)
        if nb < 0 and nt < 0:
            return
        p = nt if nb < 0 else nb if nt < 0 else min(nb, nt)
        nl = text.rfind("\n", pos, p)
        start = pos if nl < 0 else nl + 1
        end = text.find("\n", p)
        end = n if end < 0 else end
        yield start, end
        pos = end + 1


@dataclass
class _Block:
    """A closed block as offsets into the answer text: ``text[start:end]`` split at ``\\n`` holds
    its lines; ``raw_last``: the last line is an inline close's code part (kept as is)."""

    label: str
    start: int
    end: int
    indent: int
    raw_last: bool = False

    def code(self, text: str) -> str:
        lines = text[self.start:self.end].split("\n") if self.end > self.start else [""]
        last = len(lines) - 1
        code = "\n".join(_dedent(ln if self.raw_last and k == last else ln.rstrip("\r"), self.indent)
                         for k, ln in enumerate(lines))
        return code + "\n" if code else ""


def _scan(text: str) -> Iterator[_Block | None]:
    """The closed blocks of ``text`` in order (rule 2); a final ``None`` when the text ends inside
    an unclosed fence."""
    fence = ""
    label = ""
    indent = body = 0
    inline: tuple[int, int] | None = None  # (line start, code length) of the first inline close
    fence_after = False  # a fence line after that inline close
    for ls, le in _fence_lines(text):
        line = text[ls:le].rstrip("\r")
        if not fence:
            m = _fence_line(line)
            if m is None or (m[1][0] == "`" and "`" in m[2]):  # CommonMark: no backtick in the info
                continue
            indent, fence, info = m
            label, body, inline, fence_after = _label_of(info), le + 1, None, False
            continue
        if _is_closer(line, fence):
            yield _Block(label, body, ls - 1, indent)
            fence = ""
        elif inline is None:
            code = _inline_code(line, fence)
            if code is not None:
                inline = (ls, len(code))
        elif not fence_after and _fence_line(line) is not None:
            fence_after = True
    if fence:
        if inline is not None and not fence_after:
            yield _Block(label, body, inline[0] + inline[1], indent, raw_last=True)
        else:
            yield None


def fenced_blocks(text: str) -> tuple[list[tuple[str, str]], bool]:
    """Closed fenced blocks of ``text`` as ``(label, code)`` pairs in order, and whether the text
    ends inside an unclosed fence. Labels are lower-cased first words of the info string. A block
    closed by an inline fence (rule 2, docs/codegen.md) counts as closed."""
    blocks: list[tuple[str, str]] = []
    for b in _scan(text):
        if b is None:
            return blocks, True
        blocks.append((b.label, b.code(text)))
    return blocks, False


def extract_code(solution_str: str, max_chars: int = MAX_RESPONSE_CHARS) -> Extraction:
    """The program in a model response (rules: docs/codegen.md).

    - ``solution_str``: the decoded response only (verl passes no prompt).
    - ``max_chars``: the cap on the response's length in characters (rule 5).

    Returns an :class:`Extraction`; never raises (a non-``str`` value is reported as no program).
    """
    if not isinstance(solution_str, str):
        return Extraction(None, f"the response is a {type(solution_str).__name__}, not text")
    if len(solution_str) > max_chars:
        return Extraction(None, f"the response is {len(solution_str):,} characters, over the cap of "
                                f"{max_chars:,} characters on what is parsed (MAX_RESPONSE_CHARS)")
    answer = strip_reasoning(strip_end_tokens(solution_str))
    count = 0
    python = plain = None
    labels: dict[str, None] = {}
    for b in _scan(answer):
        if b is None:
            return Extraction(None, "the response ends inside an unclosed code block (cut at the length limit?)",
                              blocks=count)
        count += 1
        if b.label in PYTHON_LABELS:
            python = b
        elif b.label == "":
            plain = b
        elif len(labels) <= _MAX_LABELS_SHOWN:
            labels[b.label] = None
    if not count:
        where = " after the reasoning" if _THINK_CLOSE.search(solution_str) or _THINK_OPEN.search(solution_str) else ""
        return Extraction(None, f"no fenced code block{where}")
    chosen = python or plain
    if chosen is None:
        shown = sorted(labels)[:_MAX_LABELS_SHOWN]
        more = ", ..." if len(labels) > _MAX_LABELS_SHOWN else ""
        return Extraction(None, f"no Python code block (only {', '.join(shown)}{more})", blocks=count)
    code = chosen.code(answer)
    if not code.strip():
        return Extraction(None, "the code block is empty", label=chosen.label, blocks=count)
    return Extraction(code, label=chosen.label, blocks=count)


__all__ = ["END_TOKENS", "Extraction", "MAX_RESPONSE_CHARS", "PYTHON_LABELS", "extract_code", "fenced_blocks",
           "strip_end_tokens", "strip_reasoning"]
