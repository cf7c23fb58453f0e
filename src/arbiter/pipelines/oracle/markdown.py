"""Reader checks of an oracle answer: what a Markdown reader, an editor and g++ see must be the one program.

:func:`arbiter.pipelines.oracle.format.parse_answer` runs these after its own grammar: characters
(:func:`character_problems`: NUL, lone CR, U+2028/U+2029, NEL, bidi controls), the code
(:func:`arbiter.pipelines.oracle.cpp_text.code_problems`: spliced ``//`` comments, confusable identifiers), the reasoning (:func:`reasoning_problems`) and a real
CommonMark parse (:func:`commonmark_problems`, markdown-it-py, block level only). Each returns ``(code, message)``
pairs. Everything is linear in the text. See ``docs/oracle-format.md``.
"""

from __future__ import annotations

import re
import unicodedata

from markdown_it import MarkdownIt

#: Unicode's Bidi_Control characters (PropList.txt): the Trojan Source set (embeddings, overrides,
#: isolates and their pops) plus the three marks, as ``gcc -Wbidi-chars=any`` and GHC flag them.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # one character class: linear
#: Line breaks for Python's ``str.splitlines``, JavaScript, editors and some renderers, but not for g++ or
#: CommonMark: inside a ``//`` comment they show a reader a line g++ reads as comment.
_LINE_BREAKS = (("UNICODE_LINE_SEPARATOR", re.compile("[\u2028\u2029]")), ("NEL_CHARACTER", re.compile("\x85")))

# one parser per reading: CommonMark as a chat UI shows it (raw HTML as text, so <reasoning> is text),
# and as a renderer that passes raw HTML (GitHub-like; an HTML block can end where a code block starts)
_MD_TEXT = MarkdownIt("commonmark", {"html": False}).disable("inline")
_MD_HTML = MarkdownIt("commonmark", {"html": True}).disable("inline")

_CODE_TOKENS = ("fence", "code_block")


def _line_of(text: str, pos: int) -> int:
    """0-based line of offset ``pos`` (lines end at LF; a lone CR is refused before this is used)."""
    return text.count("\n", 0, pos)


def character_problems(text: str, code_start: int | None = None) -> list[tuple[str, str]]:
    """NUL, lone-CR, U+2028/U+2029, NEL and bidi-control findings anywhere in ``text``, each once with its first
    offset.
    ``code_start``: offset of the code (to say "in the code" or "in the reasoning")."""
    out: list[tuple[str, str]] = []

    def where(pos: int) -> str:
        return "in the code" if code_start is not None and pos >= code_start else "outside the code"

    nul = text.find("\0")
    if nul >= 0:
        out.append(("NUL_CHARACTER", f"a NUL character at offset {nul} ({where(nul)}, {text.count(chr(0))} in all); "
                    "editors and terminals drop or cut at it, so readers do not see the text g++ compiles"))
    pos = text.find("\r")
    while pos >= 0 and text.startswith("\r\n", pos):
        pos = text.find("\r", pos + 2)
    if pos >= 0:
        out.append(("LONE_CR", f"a carriage return not followed by a line feed at offset {pos} ({where(pos)}); "
                    "CommonMark and g++ read it as a line break, so readers see other lines than the format "
                    "check (use LF or CRLF line endings)"))
    for code, pattern in _LINE_BREAKS:
        m = pattern.search(text)
        if m:
            i, ch = m.start(), m.group()
            out.append((code, f"a U+{ord(ch):04X} ({unicodedata.name(ch, 'NEXT LINE')}) at offset {i} ({where(i)}): "
                        "editors, Python's splitlines and JavaScript break the line there, g++ and CommonMark do not, "
                        "so in a // comment readers see a line of code g++ never compiles"))
    m = _BIDI.search(text)
    if m:
        i, ch = m.start(), m.group()
        n = sum(1 for _ in _BIDI.finditer(text))
        out.append(("BIDI_CONTROL", f"a Unicode bidirectional control character U+{ord(ch):04X} "
                    f"({unicodedata.name(ch, '?')}) at offset {i} ({where(i)}, {n} in all): it reorders how "
                    "the text is displayed, so readers see another program than g++ (Trojan Source, CVE-2021-42574)"))
    return out


def reasoning_problems(reasoning: str, offset: int) -> list[tuple[str, str]]:
    """A ``~~~`` fence or an indented code block inside ``reasoning`` (the text between the tags, which
    starts at ``offset`` in the answer). Own rules, deliberately wider than CommonMark: any ``~~~``
    (inside a list or a quote it opens a fence too), and any line indented by 4 or more columns (a tab
    counts to the next multiple of 4) that follows a blank line, whatever list it may be in. (A line
    right after the tag's own line follows the tag, not a blank line: CommonMark reads it as part of
    the tag's paragraph or HTML block.)"""
    out: list[tuple[str, str]] = []
    k = reasoning.find("~~~")
    if k >= 0:
        out.append(("TILDE_FENCE_IN_REASONING", f"the reasoning block contains ~~~ at offset {offset + k}: a "
                    "Markdown reader sees a second code block there; code belongs in the one ```cpp block"))
    prev_blank = False
    start = 0
    first = True  # the tag's own line: never a block start
    while start <= len(reasoning):
        end = reasoning.find("\n", start)
        end = len(reasoning) if end < 0 else end
        line = reasoning[start:end]
        blank = not line.strip(" \t\r")
        if not blank and prev_blank and not first:
            col = 0
            for c in line:
                if c == " ":
                    col += 1
                elif c == "\t":
                    col += 4 - col % 4
                else:
                    break
                if col >= 4:
                    out.append(("INDENTED_CODE_IN_REASONING", f"the reasoning block has a line indented by 4 or "
                                f"more columns after a blank line at offset {offset + start}: a Markdown reader "
                                "sees an indented code block there; indent prose by at most 3 spaces"))
                    return out
        prev_blank, first = blank and not first, False  # (the tag's own line holds the tag: never blank)
        start = end + 1
    return out


def fence_position_problems(text: str, fence_start: int) -> list[tuple[str, str]]:
    """The ```` ```cpp ```` opener at ``fence_start`` must begin its line (column 0): after other text
    (``</reasoning>```cpp``) CommonMark sees no fence, and an indented opener strips that indentation
    from every code line (4 spaces make it an indented code block)."""
    ls = text.rfind("\n", 0, fence_start) + 1
    if fence_start == ls:
        return []
    return [("MALFORMED_FENCE", f"the ```cpp opener does not start its line ({_snippet(text[ls:fence_start])} "
             "before it): a Markdown reader sees no code block, or other code, there; put ```cpp at the start "
             "of its own line")]


def _describe(tok) -> str:
    if tok.type == "code_block":
        return f"an indented code block (line {tok.map[0] + 1})"
    info = f"{tok.markup}{tok.info}" if tok.info else f"a bare {tok.markup}"
    return f"a {info} fence (line {tok.map[0] + 1})"


def _in_reasoning_code(tok) -> str:
    if tok.type == "code_block":
        return "INDENTED_CODE_IN_REASONING"
    return "TILDE_FENCE_IN_REASONING" if tok.markup.startswith("~") else "FENCE_IN_REASONING"


def commonmark_problems(text: str, code: str, fence_start: int) -> list[tuple[str, str]]:
    """Compare the grammar's parse (the fence opened at offset ``fence_start``, holding ``code``) with
    markdown-it-py's CommonMark block parse of ``text``. Call it only on an answer the grammar accepted.

    - raw HTML shown as text (chat UIs): exactly one code token, a top-level ```` ```cpp ```` fence on
      the fence's line whose content is ``code`` (line endings normalized, as CommonMark does);
    - raw HTML rendered (GitHub-like): no code block before the fence's line. (There a ``<reasoning>``
      tag alone on its line opens an HTML block that runs to the next blank line and may swallow the
      fence: a property of the card's format, not of the answer, so what follows the fence's line is
      not compared.)

    A code block the reader sees in the reasoning gets the reasoning reason of its kind
    (``FENCE_IN_REASONING``, ``TILDE_FENCE_IN_REASONING``, ``INDENTED_CODE_IN_REASONING``); any other
    disagreement is ``MARKDOWN_MISMATCH``."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add(code_: str, msg: str) -> None:
        if code_ not in seen:
            seen.add(code_)
            out.append((code_, msg))

    fence_line = _line_of(text, fence_start)
    want = code.replace("\r\n", "\n")
    toks = [t for t in _MD_TEXT.parse(text) if t.type in _CODE_TOKENS]
    mine = next((t for t in toks if t.map and t.map[0] == fence_line), None)
    if mine is None:
        seen_ = ", ".join(_describe(t) for t in toks[:3]) or "no code block at all"
        add("MARKDOWN_MISMATCH", f"a CommonMark reader sees no code block starting on line {fence_line + 1} "
            f"(it sees {seen_})")
    for t in toks:
        if t.map and t.map[0] < fence_line:
            add(_in_reasoning_code(t), f"a CommonMark reader sees {_describe(t)} in the reasoning; "
                "code belongs in the one ```cpp block")
        elif t is not mine:
            add("MARKDOWN_MISMATCH", f"a CommonMark reader sees {_describe(t)} after the code block")
    if mine is not None:
        t = mine
        if t.type != "fence" or t.markup != "```" or t.info.strip() != "cpp" or t.level != 0:
            add("MARKDOWN_MISMATCH", f"a CommonMark reader sees {_describe(t)} at nesting level {t.level}, "
                "not a top-level ```cpp fence")
        elif t.content != want:
            add("MARKDOWN_MISMATCH", "a CommonMark reader sees other code in the block than the format check "
                f"({len(t.content)} vs {len(want)} characters, first difference at {_first_diff(t.content, want)})")
    # the fence's line ends every block the reasoning opened, so the text before it parses alike alone
    for t in _MD_HTML.parse(text[:fence_start]):
        if t.type in _CODE_TOKENS and t.map and t.map[0] < fence_line:
            add(_in_reasoning_code(t), f"a Markdown renderer that passes raw HTML sees {_describe(t)} in the "
                "reasoning; code belongs in the one ```cpp block")
    return out


def _first_diff(a: str, b: str) -> int:
    k, n = 0, min(len(a), len(b))
    while k < n and a[k] == b[k]:
        k += 1
    return k


def _snippet(s: str, limit: int = 40) -> str:
    return repr(s if len(s) <= limit else s[: limit - 3] + "...")
