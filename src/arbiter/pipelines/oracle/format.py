"""The oracle answer contract: the final assistant message's format and the ``messages`` check.

The answer is exactly one ``<reasoning>`` block, then one ```` ```cpp ```` fence, nothing else (the card's
"Required Oracle Return Format"); :func:`parse_answer` applies that grammar, then the reader checks of
:mod:`arbiter.pipelines.oracle.markdown`. Nothing here runs a process. The grammar, the decisions where the card
is silent and every reason code are in ``docs/oracle-format.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from arbiter.strenum import StrEnum
from arbiter.pipelines.oracle import markdown as _md
from arbiter.pipelines.oracle.cpp_text import INVISIBLE as _INVISIBLE, code_problems

REASONING_OPEN = "<reasoning>"
REASONING_CLOSE = "</reasoning>"
FENCE_LANGUAGE = "cpp"
WHITESPACE = " \t\r\n\f\v"

_FENCE_AT_LINE_START = re.compile(r"^[ \t]*(?:`{3,}|~{3,})", re.M)


class FormatCode(StrEnum):
    """Why the final assistant message does not follow the card's answer format."""

    MISSING_REASONING = "MISSING_REASONING"
    MULTIPLE_REASONING = "MULTIPLE_REASONING"
    UNCLOSED_REASONING = "UNCLOSED_REASONING"
    EMPTY_REASONING = "EMPTY_REASONING"
    REASONING_AFTER_CODE = "REASONING_AFTER_CODE"
    FENCE_IN_REASONING = "FENCE_IN_REASONING"
    TEXT_OUTSIDE = "TEXT_OUTSIDE"
    NO_FENCE = "NO_FENCE"
    MULTIPLE_FENCES = "MULTIPLE_FENCES"
    WRONG_FENCE_LANGUAGE = "WRONG_FENCE_LANGUAGE"
    MALFORMED_FENCE = "MALFORMED_FENCE"
    UNCLOSED_FENCE = "UNCLOSED_FENCE"
    EMPTY_CODE = "EMPTY_CODE"
    # what readers see (arbiter.pipelines.oracle.markdown, docs/oracle-format.md)
    TILDE_FENCE_IN_REASONING = "TILDE_FENCE_IN_REASONING"
    INDENTED_CODE_IN_REASONING = "INDENTED_CODE_IN_REASONING"
    LONE_CR = "LONE_CR"
    NUL_CHARACTER = "NUL_CHARACTER"
    UNICODE_LINE_SEPARATOR = "UNICODE_LINE_SEPARATOR"
    NEL_CHARACTER = "NEL_CHARACTER"
    BIDI_CONTROL = "BIDI_CONTROL"
    SPLICED_LINE_COMMENT = "SPLICED_LINE_COMMENT"
    CONFUSABLE_IDENTIFIER = "CONFUSABLE_IDENTIFIER"
    MARKDOWN_MISMATCH = "MARKDOWN_MISMATCH"


class MessagesCode(StrEnum):
    """Why ``messages`` is not "the seed messages exactly, plus one final assistant message"."""

    MISSING_ASSISTANT = "MISSING_ASSISTANT"
    MULTIPLE_ASSISTANT = "MULTIPLE_ASSISTANT"
    ASSISTANT_NOT_LAST = "ASSISTANT_NOT_LAST"
    ROLE_CHANGED = "ROLE_CHANGED"
    CONTENT_ALTERED = "CONTENT_ALTERED"
    MISSING_MESSAGES = "MISSING_MESSAGES"
    EXTRA_MESSAGES = "EXTRA_MESSAGES"
    EXTRA_FIELDS = "EXTRA_FIELDS"


@dataclass(frozen=True)
class Failure:
    """One reason an answer is rejected.

    - ``stage``: ``messages`` or ``format``.
    - ``code``: a :class:`MessagesCode` or :class:`FormatCode`.
    - ``message``: one line a human can act on (positions are 0-based character offsets).
    - ``path``: JSON path of the field in the return row (``$.messages[2].content``).
    """

    stage: str
    code: FormatCode | MessagesCode
    message: str
    path: str = "$"

    def to_dict(self) -> dict[str, str]:
        return {"stage": self.stage, "code": self.code.value, "message": self.message, "path": self.path}

    def __str__(self) -> str:
        return f"{self.code.value}: {self.message}"


@dataclass
class ParsedAnswer:
    """The result of :func:`parse_answer`.

    ``ok`` is True exactly when ``failures`` is empty; then ``code`` is the C++ program (the text
    between the fence lines, verbatim) and ``reasoning`` the text between the tags (verbatim).
    On failure they hold what could be extracted (possibly ``None``), for diagnostics only.
    """

    code: str | None = None
    reasoning: str | None = None
    failures: list[Failure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def codes(self) -> list[str]:
        """The failure codes, in order (empty when ok)."""
        return [f.code.value for f in self.failures]


# --------------------------------------------------------------------------------------------------
# Tokenizer


@dataclass
class _Tok:
    kind: str  # "reasoning" | "fence" | "text"
    start: int
    end: int
    content: str = ""
    closed: bool = True
    # fences only
    char: str = "`"
    ticks: int = 0
    info: str = ""
    opener_has_newline: bool = True


def _skip_ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in WHITESPACE:
        i += 1
    return i


def _line_end(s: str, i: int) -> int:
    j = s.find("\n", i)
    return len(s) if j < 0 else j


def _at_line_start(s: str, i: int) -> bool:
    k = i - 1
    while k >= 0 and s[k] in " \t":
        k -= 1
    return k < 0 or s[k] == "\n"


def _is_closing_line(line: str, char: str, ticks: int) -> bool:
    body = line.rstrip(" \t\r")
    stripped = body.lstrip(" ")
    if len(body) - len(stripped) > 3 or len(stripped) < ticks:
        return False
    return all(c == char for c in stripped)


def _fence_token(s: str, pos: int) -> _Tok:
    char = s[pos]
    n = 0
    while pos + n < len(s) and s[pos + n] == char:
        n += 1
    le = _line_end(s, pos + n)
    info = s[pos + n:le].strip(WHITESPACE)
    tok = _Tok("fence", pos, len(s), char=char, ticks=n, info=info, closed=False)
    if le == len(s):  # the opener is the last line: nothing inside, nothing closes it
        tok.opener_has_newline = False
        return tok
    code_start = le + 1
    j = code_start
    while j <= len(s):
        le2 = _line_end(s, j)
        if _is_closing_line(s[j:le2], char, n):
            tok.content = s[code_start:j]
            tok.closed = True
            tok.end = le2
            return tok
        if le2 >= len(s):
            break
        j = le2 + 1
    tok.content = s[code_start:]
    return tok


def _tokenize(s: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = _skip_ws(s, 0)
    # cached positions of the next "<reasoning>" and the next line-start fence (-1: none left);
    # recomputed only once passed, which keeps the scan linear
    next_open = next_fence = -2
    while pos < len(s):
        prev = toks[-1].kind if toks else None
        if s.startswith(REASONING_OPEN, pos):
            close = s.find(REASONING_CLOSE, pos + len(REASONING_OPEN))
            if close < 0:
                toks.append(_Tok("reasoning", pos, len(s), s[pos + len(REASONING_OPEN):], closed=False))
                break
            toks.append(_Tok("reasoning", pos, close + len(REASONING_CLOSE), s[pos + len(REASONING_OPEN):close]))
        elif (s.startswith("```", pos) or s.startswith("~~~", pos)) and (_at_line_start(s, pos) or prev == "reasoning"):
            toks.append(_fence_token(s, pos))
        else:
            if next_open != -1 and next_open <= pos:
                next_open = s.find(REASONING_OPEN, pos + 1)
            if next_fence != -1 and next_fence <= pos:
                m = _FENCE_AT_LINE_START.search(s, pos + 1)
                next_fence = m.start() if m else -1
            ends = [x for x in (next_open, next_fence) if x > pos]
            end = min(ends) if ends else len(s)
            toks.append(_Tok("text", pos, end, s[pos:end]))
        pos = _skip_ws(s, toks[-1].end)
    return toks


def _offsets(toks: list[_Tok], limit: int = 5) -> str:
    shown = ", ".join(str(t.start) for t in toks[:limit])
    return shown + (f", ... ({len(toks) - limit} more)" if len(toks) > limit else "")


def _snippet(text: str, limit: int = 60) -> str:
    t = text.strip(WHITESPACE)
    return repr(t if len(t) <= limit else t[: limit - 3] + "...")


# --------------------------------------------------------------------------------------------------
# Format check


def _reader_checks(text: str, R: list[_Tok], F: list[_Tok], fails: list[Failure], fail: Any) -> None:
    """What readers see (:mod:`arbiter.pipelines.oracle.markdown`): characters always, the reasoning when
    it closed, the CommonMark cross-check only on an answer the grammar accepted so far."""
    grammar_ok = not fails and len(R) == 1 and len(F) == 1 and F[0].closed
    code_start = F[0].start if F else None
    found = _md.character_problems(text, code_start)
    if F:
        found += _md.fence_position_problems(text, F[0].start)
    if R and R[0].closed:
        found += _md.reasoning_problems(R[0].content, R[0].start + len(REASONING_OPEN))
    if F and F[0].closed:
        found += code_problems(F[0].content, text.find("\n", F[0].start) + 1)
    if grammar_ok and not found:
        found += _md.commonmark_problems(text, F[0].content, F[0].start)
    for code, msg in found:
        fail(FormatCode(code), msg)


def _reasoning_checks(R: list[_Tok], F: list[_Tok], T: list[_Tok], fail: Any) -> bool:
    """The reasoning block's problems; returns whether a reasoning block is left unclosed."""
    unclosed_reasoning = any(not r.closed for r in R)
    if not R:
        hint = ""
        if any(REASONING_OPEN in f.content for f in F):
            hint = " (a <reasoning> tag appears only inside the code block)"
        elif any(REASONING_CLOSE in t.content for t in T):
            hint = " (</reasoning> appears without its opening tag)"
        fail(FormatCode.MISSING_REASONING, f"no <reasoning>...</reasoning> block before the code{hint}")
    if unclosed_reasoning:
        r = next(r for r in R if not r.closed)
        fail(FormatCode.UNCLOSED_REASONING, f"<reasoning> at offset {r.start} is never closed by </reasoning>")
    if len(R) > 1:
        fail(FormatCode.MULTIPLE_REASONING, f"{len(R)} <reasoning> blocks (offsets {_offsets(R)}); exactly one is allowed")
    for r in R:
        if r.closed and REASONING_OPEN in r.content:
            fail(FormatCode.MULTIPLE_REASONING, f"a <reasoning> tag is nested inside the reasoning block at offset {r.start}")
    if R and R[0].closed and _blank(R[0].content):
        fail(FormatCode.EMPTY_REASONING, "the reasoning block is empty (whitespace only, or characters drawn as nothing)")
    for r in R:
        if r.closed and "```" in r.content:
            fail(FormatCode.FENCE_IN_REASONING, f"the reasoning block contains ``` at offset {r.start + len(REASONING_OPEN) + r.content.index('```')}; code belongs in the one ```cpp block after it")
    if R and F and any(r.start > F[0].start for r in R):
        fail(FormatCode.REASONING_AFTER_CODE, f"a <reasoning> block comes after the code block (offset {max(r.start for r in R)})")
    return unclosed_reasoning


def _blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only whitespace (Unicode's too: U+00A0, U+3000) and characters
    drawn as nothing (U+200B and the other default-ignorable ones)."""
    return not _INVISIBLE.sub("", text).strip()


def _fence_checks(text: str, F: list[_Tok], unclosed_reasoning: bool, fail: Any) -> None:
    """The fences' problems: none or several, then each fence's own."""
    if not F and not unclosed_reasoning:
        hint = "" if "```" in text else " (no ``` anywhere)"
        fail(FormatCode.NO_FENCE, f"no fenced code block opened by ```cpp{hint}")
    if len(F) > 1:
        fail(FormatCode.MULTIPLE_FENCES, f"{len(F)} fenced blocks (offsets {_offsets(F)}); exactly one ```cpp block is allowed")
    for i, f in enumerate(F):
        which = "the code block" if len(F) == 1 else f"fenced block {i + 1}"
        first_word = f.info.split()[0] if f.info.split() else ""
        if f.char == "~":
            fail(FormatCode.MALFORMED_FENCE, f"{which} is opened with ~~~; the card requires ```cpp")
        elif f.ticks != 3:
            fail(FormatCode.MALFORMED_FENCE, f"{which} is opened with {f.ticks} backticks; the card requires exactly ```cpp")
        if f.char == "`" and first_word != FENCE_LANGUAGE and not (first_word.startswith(FENCE_LANGUAGE) and "`" in first_word):
            found = f"```{first_word}" if first_word else "a bare ``` (no language)"
            fail(FormatCode.WRONG_FENCE_LANGUAGE, f"{which} is opened with {found}; the card requires ```cpp")
        elif first_word.startswith(FENCE_LANGUAGE) and f.info != FENCE_LANGUAGE:
            fail(FormatCode.MALFORMED_FENCE, f"{which}: text after ```cpp on the opening line ({_snippet(f.info[len(FENCE_LANGUAGE):])}); the code must start on the next line")
        if not f.closed:
            tail = text.rstrip(WHITESPACE)
            hint = " (the closing ``` must be on its own line)" if tail.endswith("```") and f.opener_has_newline else ""
            fail(FormatCode.UNCLOSED_FENCE, f"{which} opened at offset {f.start} is never closed{hint}")
        elif not f.content.strip(WHITESPACE):
            fail(FormatCode.EMPTY_CODE, f"{which} contains no code (whitespace only)")


def _text_checks(R: list[_Tok], F: list[_Tok], T: list[_Tok], fail: Any) -> None:
    """Text outside the two parts, named by where it is."""
    for t in T:
        before_r = R and t.start < R[0].start
        after_f = F and t.start > F[0].start
        if before_r or (not R and F and t.start < F[0].start):
            where = "before the reasoning block" if R else "before the code block"
        elif after_f:
            where = "after the code block"
        elif R and F:
            where = "between the reasoning block and the code block"
        else:
            where = "outside the reasoning block and the code block"
        fail(FormatCode.TEXT_OUTSIDE, f"text {where} at offset {t.start}: {_snippet(t.content)}; only whitespace is allowed there")


def parse_answer(text: str, *, path: str = "$") -> ParsedAnswer:
    """Parse one assistant answer into reasoning and C++ code, or say precisely why it cannot be.

    ``text``: the final assistant message's content. ``path``: JSON path used in the failures
    (e.g. ``$.messages[2].content``). Returns a :class:`ParsedAnswer`; every applicable
    :class:`FormatCode` is reported once, in a fixed order: reasoning problems, ``NO_FENCE`` /
    ``MULTIPLE_FENCES``, stray text (``TEXT_OUTSIDE``), then problems of a fence itself. Never
    raises. Rules: the card's "Required Oracle Return Format" and the decisions in
    ``docs/oracle-format.md``. Linear in the length of ``text``.
    """
    if not isinstance(text, str):
        return ParsedAnswer(failures=[Failure("format", FormatCode.NO_FENCE,
                                              f"the answer is not text ({type(text).__name__})", path)])
    toks = _tokenize(text)
    R = [t for t in toks if t.kind == "reasoning"]
    F = [t for t in toks if t.kind == "fence"]
    T = [t for t in toks if t.kind == "text"]
    fails: list[Failure] = []

    def fail(code: FormatCode, msg: str) -> None:
        if all(f.code is not code for f in fails):
            fails.append(Failure("format", code, msg, path))

    unclosed_reasoning = _reasoning_checks(R, F, T, fail)
    reasoning_count = len(fails)
    _fence_checks(text, F, unclosed_reasoning, fail)

    # order: reasoning problems, fence count problems, stray text, then per-fence problems
    fence_fails, fails[:] = fails[reasoning_count:], fails[:reasoning_count]
    structural = (FormatCode.NO_FENCE, FormatCode.MULTIPLE_FENCES)
    fails.extend(f for f in fence_fails if f.code in structural)
    fence_fails = [f for f in fence_fails if f.code not in structural]
    _text_checks(R, F, T, fail)
    fails.extend(f for f in fence_fails if all(g.code is not f.code for g in fails))
    _reader_checks(text, R, F, fails, fail)

    ok = not fails and len(R) == 1 and len(F) == 1
    res = ParsedAnswer(
        code=F[0].content if F and F[0].closed else None,
        reasoning=R[0].content if R and R[0].closed else None,
        failures=fails,
    )
    if not ok and not fails:  # defensive: the grammar should make this unreachable
        res.failures.append(Failure("format", FormatCode.TEXT_OUTSIDE, "the answer does not match the format", path))
    return res


# --------------------------------------------------------------------------------------------------
# Messages check


def _as_dict(m: Any) -> dict[str, Any]:
    if isinstance(m, Mapping):
        return dict(m)
    dump = getattr(m, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    raise TypeError(f"a message must be a mapping or a pydantic model, got {type(m).__name__}")


def _first_difference(a: str, b: str) -> str:
    k = 0
    n = min(len(a), len(b))
    while k < n and a[k] == b[k]:
        k += 1
    seed_part = repr(a[k:k + 20]) if k < len(a) else "end of text"
    row_part = repr(b[k:k + 20]) if k < len(b) else "end of text"
    return f"first difference at character {k} (seed: {seed_part}, row: {row_part}; lengths {len(a)} vs {len(b)})"


def check_messages(messages: Sequence[Any], seed_messages: Sequence[Any]) -> list[Failure]:
    """Check that ``messages`` is ``seed_messages`` exactly, plus exactly one final assistant message.

    Card: "Copy the input messages exactly, then append the assistant answer." Messages are dicts
    (or pydantic models) with ``role`` and ``content``. Returns every :class:`Failure` found (empty
    when the rule holds):

    - ``MISSING_ASSISTANT``, ``MULTIPLE_ASSISTANT``, ``ASSISTANT_NOT_LAST``;
    - comparing the non-assistant messages with the seed's, position by position:
      ``ROLE_CHANGED``, ``CONTENT_ALTERED`` (names the first differing character: a stripped
      trailing newline counts), or, when their number differs, ``MISSING_MESSAGES`` /
      ``EXTRA_MESSAGES``;
    - ``EXTRA_FIELDS``: a message with keys other than ``role`` and ``content`` (not an exact copy,
      and SFT rows carry only those two keys).

    Raises ``TypeError`` when an item is neither a mapping nor a pydantic model.
    """
    ret = [_as_dict(m) for m in messages]
    seed = [_as_dict(m) for m in seed_messages]
    fails: list[Failure] = []

    def fail(code: MessagesCode, msg: str, path: str) -> None:
        fails.append(Failure("messages", code, msg, path))

    assistants = [i for i, m in enumerate(ret) if m.get("role") == "assistant"]
    if not assistants:
        fail(MessagesCode.MISSING_ASSISTANT, "no assistant message: the answer must be appended as the last message", "$.messages")
    elif len(assistants) > 1:
        fail(MessagesCode.MULTIPLE_ASSISTANT, f"{len(assistants)} assistant messages (indices {assistants}); exactly one final assistant message is allowed", "$.messages")
    elif assistants[0] != len(ret) - 1:
        fail(MessagesCode.ASSISTANT_NOT_LAST, f"the assistant message is at index {assistants[0]}, not last (index {len(ret) - 1})", f"$.messages[{assistants[0]}]")

    prefix = [(i, m) for i, m in enumerate(ret) if m.get("role") != "assistant"]
    if len(prefix) == len(seed):
        for (i, m), s in zip(prefix, seed):
            if m.get("role") != s.get("role"):
                fail(MessagesCode.ROLE_CHANGED, f"message {i} has role {m.get('role')!r}; the seed has {s.get('role')!r}", f"$.messages[{i}].role")
            if m.get("content") != s.get("content"):
                fail(MessagesCode.CONTENT_ALTERED, f"the {s.get('role')} message {i} differs from the seed's: "
                     + _first_difference(str(s.get("content")), str(m.get("content"))), f"$.messages[{i}].content")
    else:
        code = MessagesCode.MISSING_MESSAGES if len(prefix) < len(seed) else MessagesCode.EXTRA_MESSAGES
        k = 0
        while k < min(len(prefix), len(seed)) and prefix[k][1].get("role") == seed[k].get("role") and prefix[k][1].get("content") == seed[k].get("content"):
            k += 1
        roles = [m.get("role") for _, m in prefix]
        fail(code, f"the row has {len(prefix)} system/user messages {roles}, the seed has {len(seed)} "
             f"{[s.get('role') for s in seed]}; they first differ at position {k}", "$.messages")

    for i, m in enumerate(ret):
        extra = sorted(set(m) - {"role", "content"})
        if extra:
            fail(MessagesCode.EXTRA_FIELDS, f"message {i} has fields {extra} besides role and content", f"$.messages[{i}]")
    return fails


@dataclass
class AnswerCheck:
    """The result of :func:`check_answer`: ``failures`` from both stages (messages first, then
    format); ``code`` / ``reasoning`` are set when the format parsed (even if the messages check
    failed). ``ok`` means the row may go on to compilation."""

    failures: list[Failure] = field(default_factory=list)
    code: str | None = None
    reasoning: str | None = None

    @property
    def ok(self) -> bool:
        return not self.failures and self.code is not None

    @property
    def stage(self) -> str | None:
        """The first failing stage (``messages`` or ``format``), or ``None`` when ok."""
        return self.failures[0].stage if self.failures else None

    @property
    def codes(self) -> list[str]:
        return [f.code.value for f in self.failures]


def check_answer(messages: Sequence[Any], seed_messages: Sequence[Any]) -> AnswerCheck:
    """Run :func:`check_messages`, then :func:`parse_answer` on the last message when it is an
    assistant message; collect every failure. Inputs as in :func:`check_messages`."""
    fails = check_messages(messages, seed_messages)
    out = AnswerCheck(failures=list(fails))
    ret = [_as_dict(m) for m in messages]
    if ret and ret[-1].get("role") == "assistant":
        parsed = parse_answer(ret[-1].get("content"), path=f"$.messages[{len(ret) - 1}].content")
        out.failures.extend(parsed.failures)
        if parsed.ok:
            out.code, out.reasoning = parsed.code, parsed.reasoning
    return out


def check_return_row(row: Any, seed: Any) -> AnswerCheck:
    """:func:`check_answer` for a :class:`~arbiter.datasets.oracle.ReturnRow` and its
    :class:`~arbiter.datasets.oracle.SeedRow` (anything with a ``messages`` attribute).
    Raises ``ValueError`` when their ``task_id`` differ (a caller bug, not bad data)."""
    if getattr(row, "task_id", None) != getattr(seed, "task_id", None):
        raise ValueError(f"return row {getattr(row, 'task_id', None)!r} checked against seed {getattr(seed, 'task_id', None)!r}")
    return check_answer(row.messages, seed.messages)
