"""A chat-completion answer, read from its JSON body and checked before any of it becomes a sample.

An OpenAI-compatible server's answer is untrusted text: :func:`parse_completion` accepts only ``choices`` as a
list of objects, each with an integer ``index`` (or none on every choice) below the ``n`` asked for, no index
twice, a string ``message.content`` and a string or null ``finish_reason``; anything else raises
:class:`MalformedAnswer`, which the client asks again for and finally records as an error, never as a sample.
Lone surrogates in ``content`` (a reply cut inside an emoji) are kept: the JSONL writers escape them and the
judge calls such a program CE. See ``docs/codegen.md`` ("Sampling: arbiter sample").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class MalformedAnswer(ValueError):
    """An answer that is not a usable chat completion (the message says what is wrong)."""


@dataclass(frozen=True)
class Completion:
    """The usable part of one answer: ``choices`` as ``(content, finish_reason)`` in index order, the token
    ``usage`` when the server sent it."""

    choices: list[tuple[str, str | None]]
    usage: dict[str, int] | None


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _choice(c: Any, position: int, n: int) -> tuple[int | None, str, str | None]:
    if not isinstance(c, dict):
        raise MalformedAnswer(f"choices[{position}] is a {type(c).__name__}, not an object")
    index = c.get("index")
    if index is not None and not (_is_int(index) and 0 <= index < n):
        raise MalformedAnswer(f"choices[{position}].index is {index!r}: not an integer in 0..{n - 1}")
    message = c.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise MalformedAnswer(f"choices[{position}].message.content is "
                              f"{'missing' if content is None else type(content).__name__}, not a string")
    finish = c.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise MalformedAnswer(f"choices[{position}].finish_reason is a {type(finish).__name__}, not a string")
    return index, content, finish


def parse_completion(body: bytes, n: int) -> Completion:
    """The choices of a chat completion asked with ``n``; raises :class:`MalformedAnswer` (see the module)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, or nested deeper than the parser goes
        raise MalformedAnswer(f"the answer is not JSON ({type(exc).__name__}: {str(exc)[:200]})") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list):
        raise MalformedAnswer(f"choices is {'missing' if choices is None else 'a ' + type(choices).__name__}, "
                              "not a list")
    if not choices:
        raise MalformedAnswer("no choices")
    if len(choices) > n:
        raise MalformedAnswer(f"{len(choices)} choices for the {n} asked for")
    parsed = [_choice(c, i, n) for i, c in enumerate(choices)]
    indexed = [p[0] is not None for p in parsed]
    if any(indexed) and not all(indexed):
        raise MalformedAnswer("some choices have an index and others none")
    if all(indexed):
        if len({p[0] for p in parsed}) != len(parsed):
            raise MalformedAnswer("two choices have the same index")
        parsed.sort(key=lambda p: p[0])  # type: ignore[arg-type, return-value]
    return Completion([(content, finish) for _, content, finish in parsed], _usage(data.get("usage")))


def _usage(usage: Any) -> dict[str, int] | None:
    if not isinstance(usage, dict):
        return None
    return {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens") if _is_int(usage.get(k))}


__all__ = ["Completion", "MalformedAnswer", "parse_completion"]
