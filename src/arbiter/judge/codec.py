"""Task and Verdict <-> JSON, in one place.

The verdict shape is the one ``arbiter judge --json`` prints; the task shape carries every field
of :class:`~arbiter.judge.task.Task` so a task can be sent to another process or machine and
judged there. Bytes are JSON strings when they are UTF-8, else ``{"base64": "..."}``.
See ``docs/codec.md``.
"""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import asdict, fields, is_dataclass
from typing import Any

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.testsuite import CallCase, StdioCase, TestSuite
from arbiter.judge.verdict import CaseResult, Outcome, Verdict
from arbiter.sandbox.limits import Limits

VERSION = 1


def bytes_to_json(data: bytes) -> str | dict[str, str]:
    """``data`` as a JSON string when it is UTF-8, else ``{"base64": ...}``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def bytes_from_json(value: Any) -> bytes:
    """The inverse of :func:`bytes_to_json`; ``ValueError`` for anything else."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, dict) and isinstance(value.get("base64"), str):
        return base64.b64decode(value["base64"], validate=True)
    raise ValueError(f"expected a string or {{\"base64\": ...}}, got {type(value).__name__}")


# ----------------------------------------------------------------------------------------------- verdicts


_VERDICT_FIELDS = tuple(f.name for f in fields(Verdict))
_CASE_FIELDS = tuple(f.name for f in fields(CaseResult))
_CASE_FIELD_SET = frozenset(_CASE_FIELDS)
_VERDICT_NAMES = frozenset(_VERDICT_FIELDS) - {"cases", "outcome"}
#: Values ``dataclasses.asdict`` would hand back as they are (immutable leaves).
_LEAVES = frozenset((str, int, float, bool, type(None)))


def _plain(v: Any) -> Any:
    """``v`` as :func:`dataclasses.asdict` copies a field's value (dataclasses as dicts, lists,
    tuples and dicts rebuilt, anything else deep-copied)."""
    if type(v) in _LEAVES:
        return v
    if is_dataclass(v) and not isinstance(v, type):
        return asdict(v)
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return type(v)(*[_plain(x) for x in v])
    if isinstance(v, (list, tuple)):
        return type(v)(_plain(x) for x in v)
    if isinstance(v, dict):
        return type(v)((_plain(k), _plain(x)) for k, x in v.items())
    return copy.deepcopy(v)


def _case_to_dict(c: CaseResult) -> dict[str, Any]:
    outcome = c.outcome.value if isinstance(c.outcome, Outcome) else _plain(c.outcome)
    return {name: outcome if name == "outcome" else _plain(getattr(c, name)) for name in _CASE_FIELDS}


def verdict_to_json(verdict: Verdict) -> dict[str, Any]:
    """The verdict as a JSON-ready dict (``arbiter judge --json``): every field, outcomes as codes.
    (``asdict``'s dict, built field by field: ``asdict`` deep-copies every value, which cost
    tens of microseconds per case.)"""
    cases = verdict.cases
    if type(cases) is not list or any(type(c) is not CaseResult for c in cases):
        d = asdict(verdict)  # (not a verdict the judge makes: asdict's own way)
        for c in d["cases"]:
            c["outcome"] = c["outcome"].value if isinstance(c["outcome"], Outcome) else c["outcome"]
    else:
        outcome = verdict.outcome.value
        return {name: outcome if name == "outcome" else [_case_to_dict(c) for c in cases] if name == "cases"
                else _plain(getattr(verdict, name)) for name in _VERDICT_FIELDS}
    d["outcome"] = verdict.outcome.value
    return d


def verdict_from_json(d: dict[str, Any]) -> Verdict:
    """The :class:`Verdict` of :func:`verdict_to_json`'s dict (unknown keys are ignored)."""
    cases = [CaseResult(**{k: v for k, v in c.items() if k in _CASE_FIELD_SET} | {"outcome": Outcome(c["outcome"])})
             for c in d.get("cases", [])]
    return Verdict(outcome=Outcome(d["outcome"]), cases=cases,
                   **{k: v for k, v in d.items() if k in _VERDICT_NAMES})


def dumps_verdict(verdict: Verdict, *, indent: int | None = 2) -> str:
    """The JSON text ``arbiter judge --json`` prints."""
    return json.dumps(verdict_to_json(verdict), indent=indent)


# ----------------------------------------------------------------------------------------------- tasks


def _case_to_json(case: StdioCase | CallCase) -> dict[str, Any]:
    if isinstance(case, StdioCase):
        return {"kind": "stdio", "name": case.name, "stdin": bytes_to_json(case.stdin),
                "expected": [bytes_to_json(e) for e in case.expected]}
    out = {"kind": "call", "name": case.name, "fn_name": case.fn_name, "args": list(case.args),
           "kwargs": dict(case.kwargs), "expected": list(case.expected)}
    if case.node_args is not None:
        out.update(node_args=list(case.node_args), node_return=case.node_return)
    if case.int_keys:
        out["int_keys"] = True
    return out


def _case_from_json(d: dict[str, Any]) -> StdioCase | CallCase:
    if d.get("kind") == "stdio":
        return StdioCase(d["name"], bytes_from_json(d["stdin"]), tuple(bytes_from_json(e) for e in d["expected"]))
    if d.get("kind") == "call":
        return CallCase(d["name"], d["fn_name"], tuple(d.get("args", ())), dict(d.get("kwargs", {})),
                        tuple(d["expected"]), d.get("node_args"), d.get("node_return"), d.get("int_keys", False))
    raise ValueError(f"unknown case kind {d.get('kind')!r} (stdio or call)")


def suite_to_json(suite: TestSuite) -> dict[str, Any]:
    return {"origin": suite.origin, "cases": [_case_to_json(c) for c in suite.cases]}


def suite_from_json(d: dict[str, Any]) -> TestSuite:
    return TestSuite(tuple(_case_from_json(c) for c in d["cases"]), origin=d.get("origin", ""))


def task_to_json(task: Task) -> dict[str, Any]:
    """Every field of ``task`` as JSON-ready values (``version``: this shape's number)."""
    return {"version": VERSION, "language": task.language, "source": task.source, "suite": suite_to_json(task.suite),
            "limits": asdict(task.limits), "checker": asdict(task.checker), "scoring": task.scoring,
            "run_all": task.run_all, "compile": asdict(task.compile), "prelude": task.prelude,
            "task_id": task.task_id}


def task_from_json(d: dict[str, Any]) -> Task:
    """The :class:`Task` of :func:`task_to_json`'s dict; ``ValueError`` for another version or
    a field the task refuses (limits, checker, compile spec, cases check their own values)."""
    if d.get("version", VERSION) != VERSION:
        raise ValueError(f"task JSON version {d.get('version')!r}; this arbiter reads version {VERSION}")
    return Task(language=d["language"], source=d["source"], suite=suite_from_json(d["suite"]),
                limits=Limits(**d.get("limits", {})), checker=CheckerSpec(**d.get("checker", {})),
                scoring=d.get("scoring", "all_or_nothing"), run_all=bool(d.get("run_all", False)),
                compile=CompileSpec(**d.get("compile", {})), prelude=d.get("prelude", ""),
                task_id=d.get("task_id", ""))


__all__ = ["VERSION", "bytes_from_json", "bytes_to_json", "dumps_verdict", "suite_from_json", "suite_to_json",
           "task_from_json", "task_to_json", "verdict_from_json", "verdict_to_json"]
