"""LiveCodeBench ``code_generation_lite`` rows -> verl rows.

Fields (LiveCodeBench ``lcb_runner/benchmarks/code_generation.py``): ``question_id``,
``question_title``, ``question_content``, ``platform``, ``starter_code``, ``difficulty``,
``public_test_cases`` (JSON), ``private_test_cases`` (JSON or base64(zlib(pickle(json))),
decoded without trusting pickle), ``metadata`` (JSON with ``func_name`` for LeetCode
problems). Public and private tests are normalised by
:func:`arbiter.judge.encodings.livecodebench_row_to_suite` (public first) and written as
verl's ``{inputs, outputs}`` dict or ``function_call`` cases (one JSON argument per input line, as LCB's
``grade_call_based`` decodes them). No reference solutions. data_source ``livecodebench``;
index ``<prefix>_<question_id>`` (prefix default ``lcb``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from arbiter.datasets.convert import Converted, call_prompt, guarded, make_row, stdin_prompt, suite_to_ground_truth
from arbiter.datasets.verl_rows import iter_raw_rows
from arbiter.judge.encodings.livecodebench import livecodebench_row_to_suite
from arbiter.judge.testsuite import CallCase


def _row(rec: dict[str, Any], prefix: str, ds: str) -> dict[str, Any]:
    suite = livecodebench_row_to_suite(rec)
    statement = str(rec.get("question_content") or "")
    if rec.get("question_title"):
        statement = f"{rec['question_title']}\n\n{statement}"
    first = suite.cases[0]
    if isinstance(first, CallCase):
        prompt = call_prompt(statement, first.fn_name, rec.get("starter_code"))
    else:
        prompt = stdin_prompt(statement)
    return make_row(data_source=ds, prompt=prompt, ground_truth=suite_to_ground_truth(suite),
                    index=f"{prefix}_{rec['question_id']}", source="livecodebench", expected_cases=len(suite),
                    id=rec.get("question_id"), difficulty=rec.get("difficulty"))


def convert_livecodebench(path: Path, *, data_source: str | None = None, index_prefix: str | None = None) -> Iterator[Converted]:
    """LiveCodeBench rows -> :class:`Converted` (module docstring)."""
    prefix = index_prefix or "lcb"
    ds = data_source or "livecodebench"
    for position, rec in enumerate(iter_raw_rows(path)):
        label = str(rec.get("question_id") or f"row {position}")
        if "question_id" not in rec:
            yield Converted(label, error="question_id: missing")
            continue
        yield guarded(label, lambda rec=rec: _row(rec, prefix, ds))
