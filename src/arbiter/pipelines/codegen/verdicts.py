"""The ``verdicts.jsonl`` store of an ``arbiter score`` folder: one record per response, keyed
``"<row key>#<response index>"``, reused by a rerun only while the response and ground-truth
hashes still match. See ``docs/codegen.md`` ("Batch scoring").
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arbiter.datasets.io import atomic_open, decode_json_line, iter_lines, read_jsonl
from arbiter.judge import jsonvalues


def fingerprint(response_sha: Any, truth_sha: Any) -> bytes | None:
    """A short digest of a record's two hashes (``None`` when either is missing)."""
    if not isinstance(response_sha, str) or not isinstance(truth_sha, str):
        return None
    return hashlib.blake2b(f"{response_sha}:{truth_sha}".encode(), digest_size=16).digest()


def load_done(path: Path) -> tuple[dict[str, bytes | None], bool]:
    """``key -> fingerprint of (response_sha256, ground_truth_sha256)`` of the records in
    ``verdicts.jsonl`` (the last record wins; ``None`` for a record without hashes) and whether a
    key occurs more than once (a run killed after replacing a stale record)."""
    done: dict[str, bytes | None] = {}
    duplicates = False
    if not path.exists():
        return done, duplicates
    for rec in read_jsonl(path):
        key = str(rec.get("key"))
        duplicates = duplicates or key in done
        done[key] = fingerprint(rec.get("response_sha256"), rec.get("ground_truth_sha256"))
    return done, duplicates


def rewrite(path: Path, keep: Callable[[int, str, dict[str, Any]], bool]) -> None:
    """Rewrite ``verdicts.jsonl`` keeping the records for which ``keep(line number, key, record)``
    holds (streamed to a temporary file, then renamed over it; blank lines dropped)."""
    with atomic_open(path, "wb") as out:
        for line in iter_lines(path, decode=None):
            raw: bytes = line.value
            rec = decode_json_line(raw, line.number)
            if keep(line.number, str(rec.get("key")), rec):
                out.write(raw if raw.endswith(b"\n") else raw + b"\n")


def drop_earlier_duplicates(path: Path) -> None:
    """Keep only the last record of every key."""
    last: dict[str, int] = {}
    for line in iter_lines(path):
        if line.problem is not None:
            raise ValueError(f"{path} line {line.number}: {line.problem}")
        last[str(line.value.get("key"))] = line.number
    rewrite(path, lambda number, key, rec: last.get(key) == number)


def read_responses(f, entries: list[tuple[int, int]]) -> list[Any]:
    """The responses of one row: the completions records at these byte offsets, in order."""
    out: list[Any] = []
    for offset, _ in entries:
        f.seek(offset)
        out.extend(jsonvalues.loads(f.readline())["responses"])
    return out


__all__ = ["drop_earlier_duplicates", "fingerprint", "load_done", "read_responses", "rewrite"]
