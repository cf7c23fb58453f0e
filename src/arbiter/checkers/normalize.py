"""Byte-level normalisations shared by the text checkers (all run in C: no per-character loops)."""

from __future__ import annotations


def fold_case(data: bytes) -> bytes:
    """Lower-case ``data`` for the ``case_insensitive`` option.

    ASCII data (the usual case) uses ``bytes.lower``. Other data is decoded as UTF-8 with
    ``surrogateescape`` (invalid bytes survive unchanged), lower-cased with ``str.lower`` (not
    ``casefold``: ``ß`` must not become ``ss`` and change the token count) and re-encoded.
    """
    if data.isascii():
        return data.lower()
    return data.decode("utf-8", "surrogateescape").lower().encode("utf-8", "surrogateescape")
