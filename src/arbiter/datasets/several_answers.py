"""Statements that accept several answers ("in any order", "return any of them") under tests
that compare with one expected answer: a correct answer may be judged WA.

``arbiter convert`` writes the warning into the row's ``extra_info.notes`` and its report; the
verdicts are not changed (the dataset's own check fails such answers too). An order-insensitive
or custom checker would be needed. See ``docs/codegen.md`` ("Converting datasets").
"""

from __future__ import annotations

import re

#: The start of the warning (:func:`several_answers_warning`).
SEVERAL_ANSWERS = "several correct answers"

_ANSWER_VERB = re.compile(r"\b(?:return|returns|returned|output|outputs|print|prints|printed)\b", re.I)
#: Each rule is matched inside one sentence of the statement: ``(first, then)``, ``then`` searched
#: after ``first``'s match (two linear searches, never a ``.*`` that backtracks over a long sentence).
_RULES = (
    # "Return the indices ... in any order", "You may print the numbers in arbitrary order"
    (_ANSWER_VERB, re.compile(r"\bin (?:any|arbitrary) order\b", re.I)),
    # "return any of them", "print any one", "output any valid one" (not "print any extra spaces")
    (re.compile(_ANSWER_VERB.pattern + r"\s+any\s+(?:of them|one|valid|such|possible|correct|solution|answer)",
                re.I), None),
    # "If there are multiple answers, ... any"
    (re.compile(r"\b(?:multiple|several|more than one|many)\s+(?:valid\s+|possible\s+|correct\s+|optimal\s+)?"
                r"(?:answers|solutions)\b", re.I), re.compile(r"\bany\b", re.I)),
    # "any valid answer is accepted"
    (re.compile(r"\bany (?:valid|correct) (?:answer|solution|output)\b", re.I), None),
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _says_several(sentence: str) -> bool:
    for first, then in _RULES:
        found = first.search(sentence)
        if found and (then is None or then.search(sentence, found.end())):
            return True
    return False


def several_answers_sentence(statement: str) -> str:
    """The first sentence of ``statement`` saying that more than one answer is correct, or ``""``."""
    for sentence in _SENTENCE_END.split(statement):
        if _says_several(sentence):
            return " ".join(sentence.split())
    return ""


def several_answers_warning(statement: str) -> str:
    """A one-line warning (starting with :data:`SEVERAL_ANSWERS`) when the statement accepts
    several answers, else ``""``."""
    sentence = several_answers_sentence(statement)
    if not sentence:
        return ""
    quoted = sentence if len(sentence) <= 160 else sentence[:157] + "..."
    return (f"{SEVERAL_ANSWERS}: the statement says {quoted!r}, but the tests compare with one expected "
            f"answer, so a correct answer in another order or form may be judged WA (an order-insensitive "
            f"or custom checker would be needed)")


__all__ = ["SEVERAL_ANSWERS", "several_answers_sentence", "several_answers_warning"]
