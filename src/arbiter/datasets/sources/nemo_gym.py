"""NeMo-Gym ``code_gen`` rows -> verl rows.

Rows (``resources_servers/code_gen/data/example.jsonl``) carry the chat prompt in
``responses_create_params.input`` (messages whose ``content`` is text or a list of
``{"type": "input_text", "text": ...}`` parts) and stdin/stdout tests in
``verifier_metadata.unit_tests`` (normalised by
:func:`arbiter.judge.encodings.nemo_gym_row_to_suite`, written as verl's ``{inputs, outputs}`` dict). No
reference solutions. data_source: ``codeforces`` when the row's ``source`` is ``codeforces``
(the sample's problems are Codeforces problems served through TACO; Codeforces judges by
tokens, and correct programs exist that Gym's line-based grader
rejects), else ``taco``. Index ``<prefix>_<hash_id>`` (prefix default ``nemo_gym``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from arbiter.datasets.convert import (
    Converted,
    ConvertError,
    guarded,
    make_row,
    suite_to_ground_truth,
)
from arbiter.datasets.verl_rows import iter_raw_rows
from arbiter.judge.encodings.nemo_gym import nemo_gym_row_to_suite


def message_text(content: Any) -> str:
    """The text of a chat message's ``content``: a string, or the ``text`` of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    raise ConvertError(f"message content: expected text or a list of parts, got {type(content).__name__}")


def _prompt(rec: dict[str, Any]) -> list[dict[str, str]]:
    params = rec.get("responses_create_params")
    messages = params.get("input") if isinstance(params, dict) else None
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if not isinstance(messages, list) or not messages:
        raise ConvertError("responses_create_params.input: missing or empty")
    return [{"role": str(m.get("role", "user")), "content": message_text(m.get("content"))} for m in messages]


def _row(rec: dict[str, Any], prefix: str, ds: str | None) -> dict[str, Any]:
    suite = nemo_gym_row_to_suite(rec)
    data_source = ds or ("codeforces" if str(rec.get("source", "")).lower() == "codeforces" else "taco")
    return make_row(data_source=data_source, prompt=_prompt(rec), ground_truth=suite_to_ground_truth(suite),
                    index=f"{prefix}_{rec['hash_id']}", source="nemo_gym", expected_cases=len(suite),
                    id=rec.get("hash_id"))


def convert_nemo_gym(path: Path, *, data_source: str | None = None, index_prefix: str | None = None) -> Iterator[Converted]:
    """NeMo-Gym rows -> :class:`Converted` (module docstring)."""
    prefix = index_prefix or "nemo_gym"
    for position, rec in enumerate(iter_raw_rows(path)):
        label = str(rec.get("hash_id") or f"row {position}")
        if "hash_id" not in rec:
            yield Converted(label, error="hash_id: missing")
            continue
        yield guarded(label, lambda rec=rec: _row(rec, prefix, data_source))
