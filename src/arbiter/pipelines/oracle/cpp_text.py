"""What g++ reads in an answer's C++ code that a reader may not: ``//`` comments continued by a line splice,
and identifiers that look like others (mixed scripts, Unicode confusables: Trojan Source, CVE-2021-42694).

:func:`code_problems` scans the code once (comments, string, character and raw-string literals, numbers,
identifiers; linear) and returns ``(code, message)`` pairs for :mod:`arbiter.pipelines.oracle.markdown`. The
identifier checks are Unicode TR39's, from ICU's spoof checker (PyICU), run only on code that holds a non-ASCII
identifier. See ``docs/oracle-format.md``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

#: A backslash, horizontal whitespace, a line break: g++ joins the two lines (translation phase 2; it allows
#: the whitespace, with a warning).
_SPLICE = r"\\[ \t\f\v]*(?:\r\n|\n)"
_PREFIX = r"(?:u8|[uUL])?"
_TOKEN = re.compile(
    rf"(?P<line>//(?:{_SPLICE}|[^\n])*)"
    r"|(?P<block>/\*[\s\S]*?(?:\*/|\Z))"
    rf"|(?P<raw>{_PREFIX}R\"(?P<delim>[^ ()\\\t\v\f\r\n\"]{{0,16}})\((?:[\s\S]*?\)(?P=delim)\"|[\s\S]*))"
    rf"|(?P<str>{_PREFIX}\"(?:[^\"\\\n]|\\[\s\S])*\"?)"
    rf"|(?P<chr>{_PREFIX}'(?:[^'\\\n]|\\[\s\S])*'?)"
    r"|(?P<num>\.?\d(?:[eEpP][+-]|'[0-9A-Za-z_]|[\w.])*)"
    r"|(?P<ident>[^\W\d][\w\u0300-\u036f\u200c\u200d]*)"
    r"|[^/\"'\w.]+|[\s\S]")
_LINE_END_SPLICE = re.compile(r"\\[ \t\f\v]*\r?$", re.M)
#: Unicode's Default_Ignorable_Code_Point characters (DerivedCoreProperties): drawn as nothing. In an
#: identifier g++ keeps them (``ans`` and ``ans`` + U+3164 HANGUL FILLER or U+FE0F VARIATION SELECTOR-16
#: are two variables), and the identifier pattern above may not even take them in.
INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
                        "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
                        "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
#: What a reader sees as text, where an invisible character hides nothing g++ reads.
_TEXT_TOKENS = ("line", "block", "raw", "str", "chr")


def _tokens(code: str) -> Iterator[re.Match[str]]:
    return (m for m in _TOKEN.finditer(code) if m.lastgroup in ("line", "ident"))


def code_problems(code: str, offset: int = 0) -> list[tuple[str, str]]:
    """``SPLICED_LINE_COMMENT`` and ``CONFUSABLE_IDENTIFIER`` findings in C++ ``code`` (which starts at
    ``offset`` in the answer), each once. Linear in ``code``; code that is ASCII with no line ending in a
    backslash is not scanned."""
    spliced = bool(_LINE_END_SPLICE.search(code))
    if not spliced and code.isascii():
        return []
    out: list[tuple[str, str]] = []
    names: dict[str, int] = {}
    for m in _tokens(code):
        if m.lastgroup == "line":
            if spliced and not out and "\n" in m.group():  # only a line splice takes a // comment past its line
                line = code.count("\n", 0, m.start()) + 1
                out.append(("SPLICED_LINE_COMMENT", f"the // comment on line {line} of the code (offset "
                            f"{offset + m.start()}) ends in a backslash, so g++ reads the next line as comment "
                            f"too ({_next_line(m.group())}); a reader sees that line as code"))
        elif not m.group().isascii():
            names.setdefault(m.group(), m.start())
        else:
            names.setdefault(m.group(), -1)
    found = _hidden(code) or (_confusables(names) if any(pos >= 0 for pos in names.values()) else None)
    if found:
        out.append(("CONFUSABLE_IDENTIFIER", f"{found}: a reader cannot tell it from what it looks like "
                    "(Trojan Source, CVE-2021-42694); use ASCII identifiers"))
    return out


def _hidden(code: str) -> str | None:
    """The first invisible character (:data:`INVISIBLE`) outside comments and literals, described."""
    for m in _TOKEN.finditer(code):
        hidden = None if m.lastgroup in _TEXT_TOKENS else INVISIBLE.search(m.group())
        if hidden:
            return f"the code hides {_show(hidden.group())} at offset {m.start() + hidden.start()}, next to {m.group()!r}"
    return None


def _next_line(comment: str) -> str:
    rest = comment.split("\n", 2)[1].strip()
    return f"{rest[:40]!r}" if rest else "an empty line"


@functools.cache
def _checker() -> Any:
    """ICU's spoof checker (UTS #39), restriction level "highly restrictive": one script per identifier, or
    Latin with Han and Japanese or Korean scripts."""
    import icu

    checker = icu.SpoofChecker()
    checker.setChecks(icu.USpoofChecks.RESTRICTION_LEVEL | icu.USpoofChecks.INVISIBLE
                      | icu.USpoofChecks.MIXED_NUMBERS)
    checker.setRestrictionLevel(icu.URestrictionLevel.HIGHLY_RESTRICTIVE)
    return checker


def _confusables(names: dict[str, int]) -> str | None:
    """The first identifier that mixes scripts (TR39 restriction level, invisible characters, mixed digit
    sets) or has the same TR39 skeleton as another identifier of the code, described; else ``None``.
    ``names``: identifier -> its offset when not ASCII, else -1. ASCII identifiers are compared with the
    others but never with each other (``l`` and ``I`` are a font's problem, not an attack)."""
    checker = _checker()
    for name, pos in names.items():
        if pos >= 0 and checker.check(name):
            return f"the identifier {_show(name)} mixes scripts or hides characters"
    seen: dict[str, str] = {}
    for name, pos in sorted(names.items(), key=lambda kv: kv[1] >= 0):  # ASCII names first
        skeleton = checker.getSkeleton(0, name)
        other = seen.get(skeleton)
        if other is not None and pos >= 0:
            return f"the identifier {_show(name)} looks the same as the identifier {_show(other)}"
        seen.setdefault(skeleton, name)
    return None


def _show(name: str) -> str:
    """``'аns' (U+0430 CYRILLIC SMALL LETTER A, ...)``: the name and its non-ASCII characters."""
    import unicodedata

    odd = [f"U+{ord(c):04X} {unicodedata.name(c, '?')}" for c in dict.fromkeys(name) if not c.isascii()]
    return f"{name!r} ({', '.join(odd[:3])})" if odd else repr(name)


__all__ = ["INVISIBLE", "code_problems"]
