"""Prompt length: tokens of the chat-templated prompt under a local tokenizer file (the ``tokenizers``
library's ``tokenizer.json``; the ``chat_template`` of a ``tokenizer_config.json`` beside it, rendered with
the generation prompt as ``transformers`` does), else characters of the messages. See ``docs/report.md``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class TokenizerError(ValueError):
    """A ``--tokenizer`` that cannot be used; the message names the file."""


def _template(folder: Path) -> str | None:
    config = folder / "tokenizer_config.json"
    if not config.is_file():
        return None
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
    except (OSError, ValueError) as exc:
        raise TokenizerError(f"{config}: not readable JSON ({exc})") from None
    if isinstance(value, list):  # named templates: [{"name": "default", "template": ...}, ...]
        value = next((t.get("template") for t in value if t.get("name") == "default"), None)
    return value if isinstance(value, str) else None


class PromptMeter:
    """``measure(messages) -> int``: tokens (with a tokenizer) or characters; ``unit`` and ``how`` say which."""

    def __init__(self, tokenizer: str | Path | None = None):
        self._tok = None
        self._render = None
        self.unit, self.how = "characters", "characters of the messages' content"
        if tokenizer is None:
            return
        path = Path(tokenizer)
        file = path / "tokenizer.json" if path.is_dir() else path
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise TokenizerError("--tokenizer needs the 'tokenizers' package (pip install tokenizers)") from None
        try:
            self._tok = Tokenizer.from_file(str(file))
        except Exception as exc:  # the library raises its own Exception type
            raise TokenizerError(f"{file}: not a tokenizers tokenizer.json ({exc})") from None
        self.unit, self.how = "tokens", f"tokens of the messages' content under {file.name} (no chat template)"
        template = _template(file.parent)
        if template is not None:
            self._render = _compile(template, file.parent)
            self.how = f"tokens of the chat-templated prompt (generation prompt included) under {file.name}"

    def measure(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """Length of one prompt (a list of ``{role, content}``)."""
        if self._tok is None:
            return sum(len(str(m.get("content", ""))) for m in messages)
        if self._render is not None:
            text = self._render(messages)
        else:
            text = "\n".join(str(m.get("content", "")) for m in messages)
        return len(self._tok.encode(text, add_special_tokens=False).ids)


def _compile(template: str, folder: Path):
    """The chat template as ``messages -> text`` (jinja2's sandbox, ``add_generation_prompt=True``)."""
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise TokenizerError(f"{folder / 'tokenizer_config.json'} has a chat_template: rendering it needs the "
                             "'jinja2' package (pip install jinja2)") from None

    def raise_exception(message: str) -> None:
        raise TokenizerError(f"chat_template: {message}")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    compiled = env.from_string(template)
    return lambda messages: compiled.render(messages=[dict(m) for m in messages], add_generation_prompt=True)


__all__ = ["PromptMeter", "TokenizerError"]
