"""Formatting helpers for the short diffs checkers return (no comparison logic here)."""

from __future__ import annotations

import reprlib
from typing import Any

from arbiter.checkers.bigint import show_int

#: Longest rendering of one expected/actual piece inside a diff, in characters.
SHOW_CHARS = 80


def show(piece: bytes | str, limit: int = SHOW_CHARS) -> str:
    """Render a line or token for a diff: quoted, escapes visible, cut to ``limit`` characters.

    Bytes are decoded as UTF-8 with invalid bytes shown as ``\\xNN`` (never raises). Of a long
    piece only a prefix is decoded (at most 4 bytes make one shown character), with the quote
    characters the whole piece holds appended, so that ``repr`` quotes it the same way.
    """
    if isinstance(piece, bytes):
        if len(piece) > 4 * limit + 8:
            piece = piece[: 4 * limit + 8] + b"'" * (b"'" in piece) + b'"' * (b'"' in piece)
        piece = piece.decode("utf-8", "backslashreplace")
    text = repr(piece)
    if len(text) > limit:
        text = text[: limit - 4] + "...'"
    return text


def show_value(value: Any, limit: int = SHOW_CHARS) -> str:
    """Render a JSON-like value for a diff, cut to ``limit`` characters, with its type name.

    Never raises: an ``int`` beyond the interpreter's int/str digit limit is shown by its
    leading and trailing digits and its digit count (:func:`arbiter.checkers.bigint.show_int`);
    a container that ``repr`` cannot render (nested too deeply, or holding such an int) is shown
    by a bounded-depth rendering (``[[[[...]]]]``).
    """
    if isinstance(value, int) and not isinstance(value, bool):
        text = show_int(value, limit)
        return f"{text} (int)"
    try:
        text = repr(value)
    except (ValueError, RecursionError, MemoryError):  # a long int inside, or deep nesting
        text = _SHORT_REPR.repr(value)
    except Exception:  # pragma: no cover - values are plain JSON data
        text = f"<{type(value).__name__}>"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{text} ({type(value).__name__})"


class _ShortRepr(reprlib.Repr):
    """``reprlib`` with long ints rendered by :func:`show_int` (``reprlib`` calls ``repr`` on them)."""

    def repr_int(self, x: int, level: int) -> str:
        return show_int(x, self.maxlong)


_SHORT_REPR = _ShortRepr()
_SHORT_REPR.maxlevel = 4
_SHORT_REPR.maxlong = 40


def length_message(unit: str, got_n: int, want_n: int, index: int, piece: bytes) -> str:
    """Message for outputs that agree on a common prefix but differ in length.

    ``unit`` is ``"line"`` or ``"token"``; ``index`` (0-based) is the first piece one output lacks
    and ``piece`` that piece of the other (the first missing or the first extra one); numbers in
    the message are 1-based.
    """
    if got_n < want_n:
        what = "empty output" if got_n == 0 else f"output ended after {unit} {got_n}"
        return (
            f"missing {unit}s: expected {plural(want_n, unit)}, got {got_n} ({what}); "
            f"first missing {unit} {index + 1}: expected {show(piece)}"
        )
    return (
        f"extra output: expected {plural(want_n, unit)}, got {got_n}; "
        f"first extra {unit} {index + 1}: got {show(piece)}"
    )


def plural(n: int, unit: str) -> str:
    """``"1 line"``, ``"2 lines"``."""
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"
