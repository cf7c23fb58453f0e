"""LeetCodeDataset (newfacade/LeetCodeDataset) -> verl rows.

``input_output`` becomes ``function_call`` cases (positional, in ``starter_code``'s order; on
list and tree problems with the signature's ``node_args`` / ``node_return``), the
import preamble becomes ``extra_info.prelude``, ``query`` the user turn; index
``<prefix>_<task_id>``, data_source ``leetcode``. Details: ``docs/codegen.md``, "Dataset sources".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from arbiter.datasets.convert import (
    Converted,
    ConvertError,
    call_prompt,
    guarded,
    make_row,
    suite_to_ground_truth,
)
from arbiter.datasets.verl_rows import iter_raw_rows
from arbiter.judge.encodings.leetcode import leetcode_method, leetcode_row_to_suite


#: A statement's tolerance for real answers, as LeetCodeDataset's text has it: "Answers within 10-5 of the
#: actual answer will be accepted." (the superscript lost: ``10-5``; also ``10^-5``, ``10<sup>-5</sup>``).
_WITHIN = re.compile(r"[Aa]nswers? within 10\s*(?:\^|<sup>)?\s*-\s*(\d)\b")


def statement_tolerance(description: Any) -> float | None:
    """The absolute tolerance a LeetCode statement grants real answers (``1e-5`` for "Answers within
    10-5 of the actual answer will be accepted."), or ``None`` when it names none (the route's 1e-6)."""
    match = _WITHIN.search(description) if isinstance(description, str) else None
    return 10.0 ** -int(match.group(1)) if match and 1 <= int(match.group(1)) <= 9 else None


def _row(rec: dict[str, Any], label: str, prefix: str, ds: str) -> dict[str, Any]:
    result = leetcode_row_to_suite(rec)
    if result.signature is None:
        raise ConvertError("starter_code: no signature for the entry point; arguments cannot be ordered")
    nodes = result.signature.node_types  # (every row: the row decides, never the program; all null for plain values)
    gt = suite_to_ground_truth(result.suite, param_names=result.signature.param_names, nodes=nodes)
    query = rec.get("query")
    if isinstance(query, str) and query.strip():
        prompt = [{"role": "user", "content": query}]
    else:
        prompt = call_prompt(rec.get("problem_description") or "", leetcode_method(rec["entry_point"], label),
                             rec.get("starter_code"))
    completion = rec.get("completion")
    row = make_row(data_source=ds, prompt=prompt, ground_truth=gt, index=f"{prefix}_{rec['task_id']}",
                    source="leetcodedataset", expected_cases=len(result.suite), id=rec.get("question_id"),
                    difficulty=rec.get("difficulty"), url=None,
                    reference_solutions=[completion] if isinstance(completion, str) else [],
                    prelude=rec.get("prompt") if isinstance(rec.get("prompt"), str) else None,
                    notes=list(result.dropped))
    tolerance = statement_tolerance(rec.get("problem_description"))
    if tolerance is not None:  # (the route's 1e-6 refused a correct 5e-6 error: docs/codegen.md (e))
        row["extra_info"]["abs_tol"] = tolerance
    return row


def convert_leetcode(path: Path, *, data_source: str | None = None, index_prefix: str | None = None) -> Iterator[Converted]:
    """LeetCodeDataset rows -> :class:`Converted` (docs/codegen.md)."""
    prefix = index_prefix or "leetcode"
    ds = data_source or "leetcode"
    for position, rec in enumerate(iter_raw_rows(path)):
        label = str(rec.get("task_id") or f"row {position}")
        if "task_id" not in rec:
            yield Converted(label, error="task_id: missing")
            continue
        yield guarded(label, lambda rec=rec, label=label: _row(rec, label, prefix, ds))
