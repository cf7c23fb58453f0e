"""Byte-level normalisations shared by the text checkers (all run in C: no per-character loops)."""

from __future__ import annotations

# Whitespace that can end a line (bytes.rstrip strips exactly these plus LF).
_LINE_END_WHITESPACE = (b" \n", b"\t\n", b"\r\n", b"\x0b\n", b"\x0c\n")


def fold_case(data: bytes) -> bytes:
    """Lower-case ``data`` for the ``case_insensitive`` option.

    ASCII data (the usual case) uses ``bytes.lower``. Other data is decoded as UTF-8 with
    ``surrogateescape`` (invalid bytes survive unchanged), lower-cased with ``str.lower`` (not
    ``casefold``: ``ß`` must not become ``ss`` and change the token count) and re-encoded.
    """
    if data.isascii():
        return data.lower()
    return data.decode("utf-8", "surrogateescape").lower().encode("utf-8", "surrogateescape")


def strip_trailing_whitespace(data: bytes) -> bytes:
    """The ``trailing_whitespace`` normal form: trailing whitespace removed from every line and
    from the whole output.

    - each line loses its trailing spaces / tabs / CR / VT / FF (so CRLF becomes LF);
    - the whole output loses trailing whitespace, i.e. trailing blank lines and the final newline;
    - leading whitespace and blank lines *between* lines are kept: they must match.

    So ``b"1 \\n2\\n\\n"`` and ``b"1\\n2"`` have the same normal form, ``b"1\\n\\n2"`` does not.
    """
    data = data.rstrip()
    if any(marker in data for marker in _LINE_END_WHITESPACE):
        data = b"\n".join(map(bytes.rstrip, data.split(b"\n")))
    return data
