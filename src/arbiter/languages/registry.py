"""The languages arbiter judges: one line per language. See ``docs/languages.md``."""

from __future__ import annotations

from arbiter.languages.base import Language
from arbiter.languages.c import C
from arbiter.languages.cpp.language import CPP
from arbiter.languages.python import PYTHON

#: Every language by its registry name (``Task.language``).
LANGUAGES: dict[str, Language] = {lang.name: lang for lang in (
    PYTHON,
    CPP,
    C,
)}


def language_names() -> tuple[str, ...]:
    """The registry names, in table order (``python``, ``cpp``, ...)."""
    return tuple(LANGUAGES)


def get_language(name: str) -> Language | None:
    """The language called ``name``, or ``None``."""
    return LANGUAGES.get(name)


def language_for_file(filename: str) -> Language | None:
    """The language whose suffixes end ``filename`` (``.py`` -> Python), or ``None``."""
    return next((lang for lang in LANGUAGES.values() if filename.endswith(lang.suffixes)), None)
