"""One line of a JSON Lines file, decoded with an error that says what is wrong with it.

Every JSONL reader of arbiter (verl rows, completions, PIE rows, candidates and generations)
decodes its lines here, so a bad line reads the same everywhere: ``not UTF-8 text (byte 0xff at
column 12)`` or ``not valid JSON (...)``; callers add the file and the line number. Values are
decoded by :func:`arbiter.judge.jsonvalues.loads` (integers of any length, too-deep nesting as
an error, never ``RecursionError``).
"""

from __future__ import annotations

from typing import Any

from arbiter.judge import jsonvalues

BOM = b"\xef\xbb\xbf"


def decode_json_line(raw: bytes, number: int) -> Any:
    """The JSON value of line ``number`` (1-based) of a JSONL file, ``raw`` its bytes (with or
    without the newline). A UTF-8 byte order mark is skipped on line 1.

    Raises ``ValueError`` whose message names the problem: ``"not UTF-8 text (byte 0xff at column
    12)"``, ``"not valid JSON (<decoder message>)"``. Blank lines are the caller's business
    (``raw.strip()`` is empty).
    """
    if number == 1 and raw.startswith(BOM):
        raw = raw[len(BOM):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {raw[exc.start]:#04x} at column {exc.start + 1})") from None
    try:
        return jsonvalues.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
