"""The records written for one row: ``sft.jsonl``, ``verified.jsonl``, ``rejected.jsonl``. See ``docs/oracle.md``."""

from __future__ import annotations

from typing import Any, Mapping

from arbiter.datasets.oracle import Rejection, ReturnRow, return_row_key
from arbiter.pipelines.oracle.row import RowResult
from arbiter.rewards.oracle import STAGES


def _row_fields(row: ReturnRow) -> dict[str, Any]:
    raw = dict(row.raw)
    raw.pop("verification", None)
    return raw


def sft_record(row: ReturnRow) -> dict[str, Any]:
    """The SFT row: ``{"task_id", "messages"}``, messages reduced to ``role`` and ``content`` (card: "the
    messages array is already in SFT-ready chat form")."""
    return {"task_id": row.task_id, "messages": [{"role": m.role, "content": m.content} for m in row.messages]}


def sft_key(rec: Mapping[str, Any]) -> str:
    return return_row_key(str(rec.get("task_id")), list(rec.get("messages") or []))


def verified_record(row: ReturnRow, res: RowResult) -> dict[str, Any]:
    """The ``verified.jsonl`` record of an accepted row."""
    rec = {**_row_fields(row), "key": res.key, "line": res.line, "verification": res.verification,
           "claimed_verification": row.raw.get("verification"), "timing": res.timing}
    return rec


def rejected_record(row: ReturnRow, res: RowResult) -> dict[str, Any]:
    """The ``rejected.jsonl`` record of a verified-but-rejected return row."""
    return {"key": res.key, "kind": "return", "source": row.origin.source if row.origin else None,
            "line": res.line, "task_id": row.task_id, "demo_id": row.raw.get("demo_id"), "stage": res.stage,
            "stages": sorted({r["stage"] for r in res.reasons}, key=STAGES.index),
            "reasons": res.reasons, "verification": res.verification,
            "claimed_verification": row.raw.get("verification"), "row": row.raw, "timing": res.timing}


def load_rejection_record(rej: Rejection) -> dict[str, Any]:
    """The ``rejected.jsonl`` record of a row that did not load (seed, return or hidden-test row)."""
    return {"key": rej.key, "kind": rej.kind, "source": rej.source, "line": rej.line, "task_id": rej.task_id,
            "demo_id": rej.demo_id, "stage": "load", "stages": ["load"],
            "reasons": [{"stage": "load", **i.to_dict()} for i in rej.issues], "message": rej.message,
            "verification": None, "claimed_verification": None, "row": None}
