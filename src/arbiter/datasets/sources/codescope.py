"""CodeScope ``code_optimization_data.jsonl`` (xCodeEval Codeforces rows) -> verl rows.

Each row is one (problem, language) pair with two accepted programs in that language.
Only Python rows become verl rows (the reward judges Python;
the Python row's two programs are its reference solutions); rows in other languages are skipped
and reported as such. ``testcases`` (a Python literal) is normalised by
:func:`arbiter.judge.encodings.codescope_row_to_suite` and written as verl's ``{inputs, outputs}`` dict; a
test with several accepted answers cannot be expressed in verl's encodings and makes the row
bad. data_source ``codeforces`` (token comparison, which accepts every known-correct Python row);
index ``<prefix>_<id>`` (prefix default ``codescope``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from arbiter.datasets.convert import Converted, guarded, make_row, stdin_prompt, suite_to_ground_truth
from arbiter.datasets.verl_rows import iter_raw_rows
from arbiter.judge.encodings.codescope import codescope_row_to_suite


def _row(rec: dict[str, Any], prefix: str, ds: str) -> dict[str, Any]:
    suite = codescope_row_to_suite(rec)
    refs = [rec.get("time_baseline_source_code"), rec.get("memory_baseline_source_code")]
    return make_row(data_source=ds, prompt=stdin_prompt(rec.get("description") or ""),
                    ground_truth=suite_to_ground_truth(suite), index=f"{prefix}_{rec['id']}", source="codescope",
                    expected_cases=len(suite), id=rec.get("src_uid"),
                    reference_solutions=[r for r in refs if isinstance(r, str) and r.strip()])


def convert_codescope(path: Path, *, data_source: str | None = None, index_prefix: str | None = None) -> Iterator[Converted]:
    """CodeScope rows -> :class:`Converted` (module docstring)."""
    prefix = index_prefix or "codescope"
    ds = data_source or "codeforces"
    for position, rec in enumerate(iter_raw_rows(path)):
        label = f"id {rec.get('id', position)} ({rec.get('lang', '?')})"
        lang = str(rec.get("lang") or "")
        if not lang.lower().startswith("python"):
            yield Converted(label, skipped=f"language {lang or '?'}: the reward judges Python programs")
            continue
        if "id" not in rec:
            yield Converted(label, error="id: missing")
            continue
        yield guarded(label, lambda rec=rec: _row(rec, prefix, ds))
