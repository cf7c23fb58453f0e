"""Byte-level normalisations shared by the text checkers (all run in C: no per-character loops)."""

from __future__ import annotations

from arbiter.checkers.pieces import token_spans


def fold_case(data: bytes) -> bytes:
    """Lower-case ``data`` for the ``case_insensitive`` option.

    ASCII data (the usual case) uses ``bytes.lower``. Other data is decoded as UTF-8 with
    ``surrogateescape`` (invalid bytes survive unchanged), lower-cased with ``str.lower`` (not
    ``casefold``: ``ß`` must not become ``ss`` and change the token count) and re-encoded, a
    block of whole tokens at a time (:func:`~arbiter.checkers.pieces.token_spans`): a ``str``
    takes up to 4 bytes per character, and the result is the same as for the whole text, since
    an ASCII whitespace byte never lies inside a UTF-8 sequence and ends the context of the one
    context-dependent rule of ``str.lower`` (final sigma).
    """
    if data.isascii():
        return data.lower()
    return b"".join(_fold(data[start:end]) for start, end in token_spans(data))


def _fold(block: bytes) -> bytes:
    if block.isascii():
        return block.lower()
    return block.decode("utf-8", "surrogateescape").lower().encode("utf-8", "surrogateescape")
