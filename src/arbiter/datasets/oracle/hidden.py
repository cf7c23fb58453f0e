"""Hidden tests per task, loaded from one JSON object or JSONL. See ``docs/oracle.md`` ("Hidden tests")."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from arbiter.datasets.oracle.load import task_id_of, unreadable_rejection
from arbiter.datasets.oracle.records import DuplicateKey, jsonl_records, NonFinite, parse_json_strict, json_path
from arbiter.datasets.oracle.rows import MAX_HIDDEN_JSON_BYTES, MAX_LINE_BYTES, Rejection, RejectCode, RowIssue, TestCaseIO


# --------------------------------------------------------------------------------------------------
# Hidden tests


_HIDDEN_CASE_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["name", "stdin", "stdout"],
        "properties": {"name": {"type": "string"}, "stdin": {"type": "string"}, "stdout": {"type": "string"}},
    },
}


@dataclass
class HiddenTests:
    """Hidden tests per task.

    - ``tests``: ``task_id -> [TestCaseIO, ...]`` for every task whose entry is valid (an empty list
      is kept: the task simply has no hidden tests).
    - ``invalid_tasks``: task ids whose entry was rejected. Their *whole* hidden set is dropped (a
      partial set would verify against fewer tests than intended), so a caller should treat these
      tasks as unverifiable (``INVALID_TASK``) rather than as tasks without hidden tests.
    - ``rejections``: why, one per rejected entry or unreadable line.
    """

    tests: dict[str, list[TestCaseIO]] = field(default_factory=dict)
    invalid_tasks: set[str] = field(default_factory=set)
    rejections: list[Rejection] = field(default_factory=list)

    def for_task(self, task_id: str) -> list[TestCaseIO]:
        """The hidden cases of ``task_id`` (empty when none)."""
        return self.tests.get(task_id, [])


def _validate_hidden_entry(task_id: str, cases: Any, prefix: list[Any]) -> list[RowIssue]:
    from jsonschema import Draft202012Validator

    issues = [RowIssue(RejectCode.SCHEMA, json_path(prefix + list(e.absolute_path)),
                       e.message if len(e.message) <= 200 else e.message[:197] + "...")
              for e in Draft202012Validator(_HIDDEN_CASE_SCHEMA).iter_errors(cases)]
    if not issues:
        names: dict[str, int] = {}
        for i, c in enumerate(cases):
            if c["name"] in names:
                issues.append(RowIssue(RejectCode.SCHEMA, json_path(prefix + [i, "name"]),
                                       f"test name {c['name']!r} repeats case {names[c['name']]}"))
            names.setdefault(c["name"], i)
    return issues


def load_hidden_tests(
    path: str | os.PathLike,
    *,
    known_task_ids: Iterable[str] | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> HiddenTests:
    """Load hidden tests ("a file mapping task_id to cases of the visible_tests shape").

    Two shapes are accepted:

    - a JSON object ``{"task_id": [{"name", "stdin", "stdout"}, ...], ...}`` (any suffix but
      ``.jsonl``; at most :data:`MAX_HIDDEN_JSON_BYTES`);
    - JSONL (``.jsonl``, or a file that is not one JSON document): one ``{"task_id", "tests": [...]}``
      per line.

    Each task's entry is validated as a whole: wrong types, missing fields or repeated test names
    reject the entry (its task goes to ``invalid_tasks``). A task id outside ``known_task_ids``
    (when given) is rejected as ``UNKNOWN_TASK_ID``; a task id given twice in JSONL keeps the first.
    Raises nothing for bad content; an unreadable file gives one ``UNREADABLE_FILE`` rejection.
    """
    p = Path(path)
    out = HiddenTests()
    known = set(known_task_ids) if known_task_ids is not None else None

    def take(task_id: str, cases: Any, line: int | None, prefix: list[Any], id_path: str) -> None:
        _take(out, p, known, task_id, cases, line, prefix, id_path)

    try:
        if p.suffix.lower() != ".jsonl" and _load_object(p, out, take):
            return out
        _load_jsonl(p, out, take, max_line_bytes)
    except (OSError, ValueError) as e:
        out.rejections.append(unreadable_rejection(p, "hidden", e))
    return out


def _take(out: HiddenTests, p: Path, known: set[str] | None, task_id: str, cases: Any, line: int | None,
          prefix: list[Any], id_path: str) -> None:
    """Keep one task's entry, or reject it (its task becomes invalid unless already given)."""
    issues = _validate_hidden_entry(task_id, cases, prefix)
    if not issues and known is not None and task_id not in known:
        issues = [RowIssue(RejectCode.UNKNOWN_TASK_ID, id_path, f"task_id {task_id!r} is not in the seed rows")]
    if not issues and task_id in out.tests:
        issues = [RowIssue(RejectCode.DUPLICATE_TASK_ID, "$.task_id",
                           f"hidden tests for {task_id!r} already given; this entry is ignored")]
        out.rejections.append(Rejection(str(p), line, "hidden", task_id, issues))
        return
    if issues:
        out.rejections.append(Rejection(str(p), line, "hidden", task_id, issues))
        if task_id not in out.tests:
            out.invalid_tasks.add(task_id)
        return
    out.tests[task_id] = [TestCaseIO.model_validate(c) for c in cases]


def _file_problem(out: HiddenTests, p: Path, line: int | None, code: RejectCode, message: str) -> bool:
    out.rejections.append(Rejection(str(p), line, "hidden", None, [RowIssue(code, "$", message)]))
    return True


def _load_object(p: Path, out: HiddenTests, take: Any) -> bool:
    """The file as one JSON object; ``False`` when it holds several JSON values (then it is JSONL)."""
    size = p.stat().st_size
    if size > MAX_HIDDEN_JSON_BYTES:
        raise ValueError(f"{size} bytes, above the {MAX_HIDDEN_JSON_BYTES}-byte limit for one JSON object")
    raw = p.read_bytes()
    if not raw.strip():
        return True  # an empty file: no hidden test at all (refused as such by the caller)
    try:
        doc = parse_json_strict(raw.decode("utf-8-sig"))
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":
            return False  # several JSON values: JSONL
        return _file_problem(out, p, e.lineno, RejectCode.MALFORMED_JSON,
                             f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}")
    except UnicodeDecodeError as e:
        return _file_problem(out, p, None, RejectCode.NOT_UTF8, f"not UTF-8 text: invalid byte at offset {e.start}")
    except (DuplicateKey, NonFinite) as e:
        code = RejectCode.DUPLICATE_JSON_KEY if isinstance(e, DuplicateKey) else RejectCode.NON_FINITE_NUMBER
        return _file_problem(out, p, None, code, str(e))
    if not isinstance(doc, dict):
        return _file_problem(out, p, None, RejectCode.SCHEMA,
                             f"expected an object task_id -> list of tests, got {type(doc).__name__}")
    for task_id, cases in doc.items():
        take(task_id, cases, None, [task_id], json_path([task_id]))
    return True


def _load_jsonl(p: Path, out: HiddenTests, take: Any, max_line_bytes: int) -> None:
    """One ``{"task_id", "tests"}`` entry per line."""
    for rec in jsonl_records(p, max_line_bytes):
        if rec.issue is not None:
            out.rejections.append(Rejection(str(p), rec.line, "hidden", None, [rec.issue]))
            continue
        v = rec.value
        if not isinstance(v, dict) or not isinstance(v.get("task_id"), str) or "tests" not in v:
            out.rejections.append(Rejection(str(p), rec.line, "hidden", task_id_of(v), [RowIssue(
                RejectCode.SCHEMA, "$", 'expected {"task_id": str, "tests": [{name, stdin, stdout}, ...]}')]))
            if task_id_of(v) and task_id_of(v) not in out.tests:
                out.invalid_tasks.add(task_id_of(v))  # type: ignore[arg-type]
            continue
        take(v["task_id"], v["tests"], rec.line, ["tests"], "$.task_id")
