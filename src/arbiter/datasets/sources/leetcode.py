"""LeetCodeDataset (newfacade/LeetCodeDataset) -> verl rows.

Input: the dataset's JSON Lines (``LeetCodeDataset-v0.3.1-test.jsonl.gz``; also Parquet/HF).
Per row:

- ``input_output`` pairs are normalised by :func:`arbiter.judge.encodings.leetcode_row_to_suite`
  (keyword arguments parsed as safe literals, ``-> str`` outputs kept bare, generator-failure
  pairs dropped: they are listed in ``extra_info.notes``) and written as ``function_call``
  cases with positional arguments in the order of ``starter_code``'s signature (the card's
  encoding has no keyword arguments); a row without a parseable signature is a bad row.
- ``prompt`` (the dataset's import preamble, which defines ``ListNode``/``TreeNode`` and
  star-imports the standard library) becomes ``extra_info.prelude``: the reward runs it before
  the program, as the dataset's own ``check`` does; the sandbox's harness builds ``ListNode`` /
  ``TreeNode`` arguments from the level-order lists and serialises returned nodes back.
- ``query`` (the dataset's chat prompt) becomes the user turn; ``completion`` is the reference
  solution.

Index ``<prefix>_<task_id>`` (prefix default ``leetcode``), data_source ``leetcode``.
"""

from __future__ import annotations

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


def _row(rec: dict[str, Any], label: str, prefix: str, ds: str) -> dict[str, Any]:
    result = leetcode_row_to_suite(rec)
    if result.signature is None:
        raise ConvertError("starter_code: no signature for the entry point; arguments cannot be ordered")
    gt = suite_to_ground_truth(result.suite, param_names=result.signature.param_names)
    query = rec.get("query")
    if isinstance(query, str) and query.strip():
        prompt = [{"role": "user", "content": query}]
    else:
        prompt = call_prompt(rec.get("problem_description") or "", leetcode_method(rec["entry_point"], label),
                             rec.get("starter_code"))
    completion = rec.get("completion")
    return make_row(data_source=ds, prompt=prompt, ground_truth=gt, index=f"{prefix}_{rec['task_id']}",
                    source="leetcodedataset", expected_cases=len(result.suite), id=rec.get("question_id"),
                    difficulty=rec.get("difficulty"), url=None,
                    reference_solutions=[completion] if isinstance(completion, str) else [],
                    prelude=rec.get("prompt") if isinstance(rec.get("prompt"), str) else None,
                    notes=list(result.dropped))


def convert_leetcode(path: Path, *, data_source: str | None = None, index_prefix: str | None = None) -> Iterator[Converted]:
    """LeetCodeDataset rows -> :class:`Converted` (module docstring)."""
    prefix = index_prefix or "leetcode"
    ds = data_source or "leetcode"
    for position, rec in enumerate(iter_raw_rows(path)):
        label = str(rec.get("task_id") or f"row {position}")
        if "task_id" not in rec:
            yield Converted(label, error="task_id: missing")
            continue
        yield guarded(label, lambda rec=rec, label=label: _row(rec, label, prefix, ds))
