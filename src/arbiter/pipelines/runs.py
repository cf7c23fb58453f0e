"""A run folder: the output folder of one batch job, with its lock, its config fingerprint,
its sinks, its error log and its summary.

:class:`RunFolder` creates and locks the folder (:func:`arbiter.pipelines.outputs.ensure_out_dir`:
one run per folder), records what the results depend on in ``config.json`` and refuses a rerun
made with anything else (:class:`ConfigMismatch`, naming what differs; each job gives its own
fingerprint fields and wording through :class:`ConfigRules`), and opens the job's JSONL sinks
and ``errors.jsonl``. Whole files are written atomically. See ``docs/codegen.md`` ("Run folders").
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.datasets.io import JsonlSink, write_json_atomic
from arbiter.pipelines.outputs import ensure_out_dir

CONFIG_FILE = "config.json"
ERRORS_FILE = "errors.jsonl"
SUMMARY_FILE = "summary.json"


class ConfigMismatch(ValueError):
    """The output folder holds results made from other inputs or options; resuming into it would
    keep them for work they were not made for. The message names what differs."""


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The top-level fields that differ, sorted; a changed ``options`` field is spelled out as
    ``option NAME (old -> new)`` per option."""
    changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if "options" in changed:
        o, n = old.get("options") or {}, new.get("options") or {}
        changed = [c for c in changed if c != "options"] + [
            f"option {k} ({o.get(k)!r} -> {n.get(k)!r})" for k in sorted(set(o) | set(n)) if o.get(k) != n.get(k)]
    return changed


def _refuse(what: str) -> Callable[[Path, list[str]], str]:
    return lambda out, diffs: (f"{out} holds {what} made with other inputs or options (changed: {', '.join(diffs)}); "
                               f"use another --out folder or delete it")


@dataclass(frozen=True)
class ConfigRules:
    """How a job compares a folder's ``config.json`` with its fingerprint.

    - ``what``: what the folder holds, for the default message (``"verdicts"``, ``"rewards"``);
    - ``describe(old, new)``: the differences, one phrase each (empty: the same run);
    - ``refuse(out, diffs)``: the message (default: ``<out> holds <what> made with other inputs
      or options (changed: ...); ...``);
    - ``unreadable(path, out, exc)``: the message for a ``config.json`` that cannot be read;
      ``None``: such a file, or one that is not a JSON object, is replaced;
    - ``missing(out)``: without ``config.json``, a refusal message (results but no config) or
      ``None`` to write it;
    - ``write(path, fingerprint)``: how ``config.json`` is written (atomically);
    - ``error``: the exception class raised (a :class:`ConfigMismatch`).
    """

    what: str = "results"
    describe: Callable[[dict[str, Any], dict[str, Any]], list[str]] = changed_fields
    refuse: Callable[[Path, list[str]], str] | None = None
    unreadable: Callable[[Path, Path, Exception], str] | None = None
    missing: Callable[[Path], str | None] | None = None
    write: Callable[[Path, dict[str, Any]], None] = write_json_atomic
    error: type[ConfigMismatch] = ConfigMismatch


def _read_config(path: Path, out: Path, rules: ConfigRules) -> dict[str, Any] | None:
    """The recorded fingerprint; ``None`` when it is to be (re)written."""
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        if rules.unreadable is None and isinstance(exc, ValueError):
            return None
        if rules.unreadable is None:
            raise
        raise rules.error(rules.unreadable(path, out, exc)) from None
    if not isinstance(old, dict):
        return {} if rules.unreadable is not None else None
    return old


def check_config(out: Path, fingerprint: dict[str, Any], rules: ConfigRules = ConfigRules()) -> None:
    """Record ``fingerprint`` in ``out/config.json`` on the first run; on a rerun raise
    ``rules.error`` naming every difference. Touches nothing else in ``out``."""
    path = out / CONFIG_FILE
    if not path.exists():
        refusal = rules.missing(out) if rules.missing is not None else None
        if refusal:
            raise rules.error(refusal)
        rules.write(path, fingerprint)
        return
    old = _read_config(path, out, rules)
    if old is None:
        rules.write(path, fingerprint)
        return
    if old == fingerprint:
        return
    diffs = rules.describe(old, fingerprint)
    if diffs:
        raise rules.error((rules.refuse or _refuse(rules.what))(out, diffs))


class ErrorLog:
    """``errors.jsonl`` of this run (started empty): one ``{"kind", "message", ...}`` line per
    problem, flushed as written; thread-safe. ``count``: problems added."""

    def __init__(self, path: Path):
        self.path = path
        self.count = 0
        self._lock = threading.Lock()
        self._f = open(path, "w", encoding="utf-8")

    def add(self, kind: str, message: str, **extra: Any) -> None:
        line = json.dumps({"kind": kind, "message": message, **extra}, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self.count += 1
            self._f.write(line)
            self._f.flush()

    def close(self) -> None:
        with self._lock:
            if not self._f.closed:
                self._f.close()


class RunFolder:
    """The output folder of one run: created and locked when made (``OutputDirError``,
    ``OutputDirBusy``); a context manager closing the sinks and the error log it opened.
    Call within a :func:`~arbiter.pipelines.outputs.holds_out_dirs` entry point."""

    def __init__(self, out_dir: str | os.PathLike):
        self.path: Path = ensure_out_dir(out_dir)
        self._open: list[JsonlSink | ErrorLog] = []

    def file(self, name: str) -> Path:
        return self.path / name

    def check_config(self, fingerprint: dict[str, Any], rules: ConfigRules = ConfigRules()) -> None:
        """:func:`check_config` on this folder."""
        check_config(self.path, fingerprint, rules)

    def sink(self, name: str, key: str | Callable[[dict[str, Any]], str], *, fsync: bool = False) -> JsonlSink:
        """The resumable JSONL sink ``name`` (closed with the folder)."""
        s = JsonlSink(self.path / name, key=key, fsync=fsync)
        self._open.append(s)
        return s

    def errors(self, name: str = ERRORS_FILE) -> ErrorLog:
        """This run's error log ``name`` (emptied: it holds this run's problems only)."""
        log = ErrorLog(self.path / name)
        self._open.append(log)
        return log

    def write_json(self, name: str, data: Any, **kw: Any) -> Path:
        """Replace ``name`` with ``data`` as JSON atomically (:func:`write_json_atomic` options)."""
        write_json_atomic(self.path / name, data, **kw)
        return self.path / name

    def write_summary(self, summary: Any, name: str = SUMMARY_FILE, *, indent: int = 2,
                      ensure_ascii: bool = True) -> Path:
        """``summary.json``: indent 2, ASCII by default (the jobs' historical format), atomic."""
        return self.write_json(name, summary, indent=indent, ensure_ascii=ensure_ascii)

    def close(self) -> None:
        while self._open:
            self._open.pop().close()

    def __enter__(self) -> "RunFolder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["CONFIG_FILE", "ERRORS_FILE", "SUMMARY_FILE", "ConfigMismatch", "ConfigRules", "ErrorLog", "RunFolder",
           "changed_fields", "check_config"]
