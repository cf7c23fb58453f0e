"""SandboxFusion's ``POST /run_jupyter``: a notebook's cells run one after another in one Python
process in the sandbox (one namespace; a cell's last expression is displayed as ``text/plain``,
an exception is the cell's ``error`` and the next cell still runs). No Jupyter kernel: rich
display, magics and ``cell_timeout`` are not supported (docs/serve.md)."""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Optional

from pydantic import BaseModel, Field

from arbiter.judge.run_once import run_once
from arbiter.sandbox.limits import MiB, Limits
from arbiter.server import answer
from arbiter.server.config import ServerConfig
from arbiter.server.runcode import BadRequest, OurFailure, fetch_paths, request_files, utf8_bytes

#: The notebook's driver: the cells come on stdin as JSON, the results go to the real stdout
#: after a marker line (a cell writing to descriptor 1 itself can only spoil its own answer).
DRIVER = r'''
import ast, io, json, os, sys, traceback
_cells = json.loads(sys.stdin.read())
_out = os.fdopen(os.dup(1), "w")
_ns = {"__name__": "__main__"}
_results = []
for _src in _cells:
    _o, _e, _display, _error = io.StringIO(), io.StringIO(), [], []
    sys.stdout, sys.stderr = _o, _e
    try:
        _tree = ast.parse(_src, "<cell>")
        _last = _tree.body.pop() if _tree.body and isinstance(_tree.body[-1], ast.Expr) else None
        exec(compile(_tree, "<cell>", "exec"), _ns)
        if _last is not None:
            _value = eval(compile(ast.Expression(_last.value), "<cell>", "eval"), _ns)
            if _value is not None:
                _display.append({"text/plain": repr(_value)})
    except BaseException as _exc:
        _error.append({"ename": type(_exc).__name__, "evalue": str(_exc),
                       "traceback": traceback.format_exception(_exc)})
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    _results.append({"stdout": _o.getvalue(), "stderr": _e.getvalue(), "display": _display, "error": _error,
                     "status": "error" if _error else "ok"})
_out.write("\n%s\n" % MARK + json.dumps(_results) + "\n")
_out.flush()
'''


class RunJupyterRequest(BaseModel):
    """SandboxFusion's request (``kernel`` must be ``python3``)."""

    cells: list[str]
    cell_timeout: float = 0
    total_timeout: float = 45
    kernel: str = "python3"
    files: dict[str, Optional[str]] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


def run_jupyter(req: RunJupyterRequest, cfg: ServerConfig, mark: str) -> BinaryIO:
    """Run the notebook; the SandboxFusion answer, spooled. Raises :class:`BadRequest` (422) and
    :class:`OurFailure` (504)."""
    if req.kernel != "python3":
        raise BadRequest(f"kernel: only 'python3', got {req.kernel!r}")
    if not 0 < req.total_timeout <= cfg.max_seconds:
        raise BadRequest(f"total_timeout must be in (0, {cfg.max_seconds:g}] seconds, got {req.total_timeout:g}")
    for i, cell in enumerate(req.cells):
        utf8_bytes(cell, f"cells[{i}]")
    fetch = fetch_paths(req)  # type: ignore[arg-type]  (the same fields as /run_code's)
    limits = Limits(cpu_seconds=req.total_timeout, wall_seconds=req.total_timeout,
                    memory_bytes=cfg.default_memory_mb * MiB, output_bytes=cfg.max_output_bytes)
    once = run_once("python", DRIVER.replace("MARK", repr(mark)), json.dumps(req.cells).encode(), limits,
                    files=request_files(req), fetch=tuple(fetch), fetch_bytes=cfg.max_output_bytes)  # type: ignore[arg-type]
    if once.sandbox_error:
        raise OurFailure(once.sandbox_error)
    return answer.spool(to_answer(once, mark, dict(fetch)))


def to_answer(once, mark: str, spelled: dict[str, str]) -> dict[str, Any]:
    ex = once.execution
    driver = {"status": "Finished", "execution_time": ex.wall_seconds if ex else 0.0,
              "return_code": ex.exit_code if ex else 1, "stdout": "", "stderr": (ex.stderr if ex else b"").decode(
                  "utf-8", "replace") or once.load_error}
    head, sep, tail = (ex.stdout if ex else b"").rpartition(f"\n{mark}\n".encode())
    if ex is None or not sep or ex.status.value != "ok":
        timed_out = ex is not None and ex.status.value == "time_limit"
        driver["status"] = "TimeLimitExceeded" if timed_out else "Finished"
        return _jupyter("Failed", ex.detail if ex else "the notebook driver did not start", driver, [], {})
    cells = _cells(tail)
    if cells is None:  # a cell wrote over the driver's report (the marker is readable from a cell)
        return _jupyter("Failed", "the notebook's report of its cells could not be read: a cell wrote over it",
                        driver, [], {})
    files = {spelled.get(k, k): answer.Raw(v, False) for k, v in once.files.items()}
    return _jupyter("Success", "", driver, cells, files)


def _cells(report: bytes) -> list[dict] | None:
    """The driver's report of the cells (a JSON list of objects), or None when it is not one."""
    try:
        cells = json.loads(report.decode("utf-8", "replace"))
    except ValueError:
        return None
    return cells if isinstance(cells, list) and all(isinstance(c, dict) for c in cells) else None


def _jupyter(status: str, message: str, driver: dict, cells: list, files: dict) -> dict[str, Any]:
    return {"status": status, "message": message, "driver": driver, "cells": cells, "executor_pod_name": None,
            "files": files}
