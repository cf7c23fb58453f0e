"""Code-block extraction: a model's markdown response -> the Python program to judge.

Rules (decided here; peers differ, see ``reference/verl_reward.md`` and
``reference/codegen_harnesses.md``):

1. **Think blocks are dropped.** Everything up to and including the *last* ``</think>`` is
   reasoning, not the answer (templates that open ``<think>`` in the prompt leave only the closing
   tag in the response). A ``<think>`` that is opened after that and never closed starts
   unfinished reasoning: the text from it on is dropped too. Fences inside the reasoning are
   never candidates, so a draft program in the reasoning cannot become the answer.
2. **Fences are line-based** (CommonMark): an opening line of optional indentation, three or
   more backticks (or tildes) and an optional info string; the block ends at a line holding only
   the same fence character, at least as many times. So ```` ``` ```` inside a code line (a
   string literal ``"```"``) never closes a block, and a 4-backtick fence can quote a 3-backtick
   one. An indented fence (inside a list item) has that indentation removed from its lines.
   **One exception, the inline closing fence**: a block with no closing line whose code line
   *ends* with the fence (```` print(x)``` ````, at least as many of the same character; spaces
   before it are dropped) is closed there, when nothing after that line is a fence line (the
   response ends, or only whitespace or prose follows). Models write this, and verl's
   extractors accept it (``sandbox_fusion``'s non-greedy regex, ``prime_code``'s
   ``split("```")``). The first such line closes the block. With a fence line after it (a new
   block that is never closed) the response is still unclosed (rule 4).
3. **Which block is the solution.** Blocks labelled Python (the first word of the info string,
   case-insensitive: ``python``, ``python3``, ``py``, ``py3``; so ```` ```Python3 ```` counts) and
   unlabelled blocks are candidates. The **last Python-labelled block** wins; when there is none,
   the **last unlabelled block**. (A response often ends with an unlabelled block of sample
   output after its ```` ```python ```` solution; the rule keeps the solution. rllm takes the last
   block of any label, verl ``sandbox_fusion`` the last ```` ```python ```` block else the first
   block.) Blocks in another language (```` ```cpp ````, ```` ```text ````, ```` ```bash ````)
   are never run: a response with only such blocks has no Python program.
4. **No program is FORMAT_ERROR** (score 0): no fence at all (unlike verl ``prime_code``, which
   runs the whole completion as code), only non-Python blocks, an empty block, or a response
   that ends inside an unclosed fence, with no inline closing fence either (a response cut at
   the generation length limit: its final answer is incomplete, and an earlier closed block is a
   draft, not the answer).

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PYTHON_LABELS = frozenset({"python", "python3", "py", "py3"})

_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")


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


def strip_reasoning(text: str) -> str:
    """The answer part of a response: the text after the last ``</think>``, cut at a later
    ``<think>`` that is never closed (rule 1 of the module docstring)."""
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end():]
    opened = _THINK_OPEN.search(text)
    if opened is not None:
        text = text[: opened.start()]
    return text


def _label_of(info: str) -> str:
    word = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    word = word.strip("{}").lstrip(".").lower()
    return word


def _dedent(line: str, indent: int) -> str:
    i = 0
    while i < indent and i < len(line) and line[i] in " \t":
        i += 1
    return line[i:]


def _inline_close(lines: list[str], start: int, fence: str, indent: int) -> list[str] | None:
    """The body of a block opened before ``lines[start]`` that has no closing line, when one of
    its lines ends with the fence (rule 2's inline exception) and no fence line follows that
    line; else ``None``. The fence run (and the spaces before it) is cut off that line."""
    tail = re.compile(r"(?P<code>.*?)[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
    for k in range(start, len(lines)):
        line = lines[k].rstrip("\r")
        if not line.rstrip(" \t").endswith(fence):
            continue
        m = tail.fullmatch(line)
        if m is None or not m.group("code").strip() or m.group("code").endswith(fence[0]):
            continue
        if any(_FENCE_OPEN.match(later.rstrip("\r")) for later in lines[k + 1:]):
            return None  # a fence after it: not the response's final code line
        return [_dedent(lines[n].rstrip("\r"), indent) for n in range(start, k)] + [_dedent(m.group("code"), indent)]
    return None


def fenced_blocks(text: str) -> tuple[list[tuple[str, str]], bool]:
    """Closed fenced blocks of ``text`` as ``(label, code)`` pairs in order, and whether the text
    ends inside an unclosed fence. Labels are lower-cased first words of the info string. A block
    closed by an inline fence (module docstring, rule 2) counts as closed."""
    blocks: list[tuple[str, str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i].rstrip("\r"))
        if m is None:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info")
        if fence[0] == "`" and "`" in info:  # CommonMark: a backtick fence's info has no backtick
            i += 1
            continue
        indent = len(m.group("indent"))
        closer = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
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


def extract_code(solution_str: str) -> Extraction:
    """The program in a model response (rules in the module docstring).

    - ``solution_str``: the decoded response only (verl passes no prompt), any length.

    Returns an :class:`Extraction`; never raises (a non-``str`` value is reported as no program).
    """
    if not isinstance(solution_str, str):
        return Extraction(None, f"the response is a {type(solution_str).__name__}, not text")
    answer = strip_reasoning(solution_str)
    blocks, unclosed = fenced_blocks(answer)
    if unclosed:
        return Extraction(None, "the response ends inside an unclosed code block (cut at the length limit?)",
                          blocks=len(blocks))
    if not blocks:
        where = " after the reasoning" if _THINK_CLOSE.search(solution_str) or _THINK_OPEN.search(solution_str) else ""
        return Extraction(None, f"no fenced code block{where}")
    python = [b for b in blocks if b[0] in PYTHON_LABELS]
    plain = [b for b in blocks if b[0] == ""]
    chosen = python[-1] if python else plain[-1] if plain else None
    if chosen is None:
        labels = sorted({b[0] for b in blocks})
        return Extraction(None, f"no Python code block (only {', '.join(labels)})", blocks=len(blocks))
    label, code = chosen
    if not code.strip():
        return Extraction(None, "the code block is empty", label=label, blocks=len(blocks))
    return Extraction(code, label=label, blocks=len(blocks))


__all__ = ["Extraction", "PYTHON_LABELS", "extract_code", "fenced_blocks", "strip_reasoning"]
