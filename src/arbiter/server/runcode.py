"""SandboxFusion's ``POST /run_code``: the request and answer as the ``sandbox-fusion`` client and
verl's sandbox_fusion reward send and read them, run through :func:`arbiter.judge.run_once.run_once`.
What each status means: ``docs/serve.md``."""

from __future__ import annotations

import base64
import binascii
from typing import Any, Optional

from pydantic import BaseModel, Field

from arbiter.judge.run_once import RunOnce, WarmSandboxes, run_once, supported_languages
from arbiter.judge.testsuite import str_to_bytes
from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.server.config import ServerConfig


class RunCodeRequest(BaseModel):
    """SandboxFusion's request (unknown fields are ignored, as SandboxFusion does)."""

    code: str
    language: str
    stdin: Optional[str] = None
    compile_timeout: float = 10.0
    run_timeout: float = 10.0
    memory_limit_MB: float = -1
    files: dict[str, Optional[str]] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


class BadRequest(ValueError):
    """A request the service refuses with 422 (the message names the field)."""


class OurFailure(Exception):
    """arbiter itself failed to run the program (answered 504 so that clients retry)."""


def _limits(req: RunCodeRequest, cfg: ServerConfig) -> Limits:
    for name in ("run_timeout", "compile_timeout"):
        value = getattr(req, name)
        if not 0 < value <= cfg.max_seconds:
            raise BadRequest(f"{name} must be in (0, {cfg.max_seconds:g}] seconds, got {value:g}")
    mb = cfg.default_memory_mb if req.memory_limit_MB is None or req.memory_limit_MB <= 0 else req.memory_limit_MB
    if mb > cfg.max_memory_mb:
        raise BadRequest(f"memory_limit_MB must be at most {cfg.max_memory_mb}, got {mb:g}")
    return Limits(cpu_seconds=req.run_timeout, memory_bytes=int(mb * MiB), output_bytes=cfg.max_output_bytes)


def _files(req: RunCodeRequest) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name, data in req.files.items():
        try:
            out[name] = base64.b64decode(data or "", validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest(f"files[{name!r}]: not base64") from None
    return out


def check(req: RunCodeRequest, cfg: ServerConfig) -> None:
    """Raise :class:`BadRequest` (422/413) for limits or files the service refuses."""
    _limits(req, cfg)
    _files(req)


def run_code(req: RunCodeRequest, cfg: ServerConfig, warm: WarmSandboxes | None) -> dict[str, Any]:
    """Run the request; the SandboxFusion answer. Raises :class:`BadRequest` (422) and
    :class:`OurFailure` (504: our sandbox failed after retries)."""
    if req.language not in supported_languages():
        return _answer("SandboxError", f"language {req.language!r} is not supported by arbiter; supported: "
                                       f"{', '.join(supported_languages())}")
    limits = _limits(req, cfg)
    try:
        once = run_once(req.language, req.code, str_to_bytes(req.stdin or ""), limits,
                        compile_seconds=req.compile_timeout, files=_files(req), fetch=tuple(req.fetch_files),
                        warm=warm)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if once.sandbox_error:
        raise OurFailure(once.sandbox_error)
    return to_answer(once)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _result(status: str, seconds: float | None, code: int | None, stdout: str, stderr: str,
            cpu: float | None = None, **arbiter: Any) -> dict[str, Any]:
    return {"status": status, "execution_time": seconds, "cpu_time": cpu, "return_code": code, "stdout": stdout,
            "stderr": stderr, "arbiter": arbiter}


def _answer(status: str, message: str, compile_result: dict | None = None, run_result: dict | None = None,
            files: dict[str, str] | None = None) -> dict[str, Any]:
    return {"status": status, "message": message, "compile_result": compile_result, "run_result": run_result,
            "executor_pod_name": None, "files": files or {}}


def _compile_message(reason: str, output: str) -> str:
    """``compile error: main.cpp:1:13: error: ...``: the reason, then the compiler's first error line."""
    lines = [x.strip() for x in output.splitlines() if x.strip()]
    first = next((x for x in lines if "error" in x), lines[0] if lines else "")
    head = reason if "compile" in reason else f"compile error: {reason}"
    return f"{head}: {first[:300]}" if first and first not in head else head


def to_answer(once: RunOnce) -> dict[str, Any]:
    """The SandboxFusion answer for what :func:`run_once` saw (no sandbox error in it)."""
    compile_result = None
    if once.compiled:
        failed = once.build_failure is not None
        compile_result = _result("Finished", once.compile_seconds, 1 if failed else 0, "", once.compile_output,
                                 status_detail="compile_error" if failed else "ok")
    if once.build_failure is not None:
        message = _compile_message(once.build_failure.reason, once.compile_output)
        if once.compiled:
            return _answer("Failed", message, compile_result)
        # an interpreted program that cannot be read (a lone surrogate): python would exit 1, as for a SyntaxError
        run = _result("Finished", 0.0, 1, "", once.compile_output, status_detail="compile_error")
        return _answer("Failed", message, None, run)
    if once.execution is None:  # a Python program that does not load: python would exit 1
        run = _result("Finished", 0.0, 1, "", once.load_error, status_detail="compile_error")
        return _answer("Failed", "the program does not compile (SyntaxError)", compile_result, run)
    ex = once.execution
    timed_out = ex.status is Status.TIME_LIMIT
    code = None if timed_out else ex.exit_code if ex.exit_code is not None else -(ex.signal or 9)
    if ex.status is not Status.OK and code == 0:
        code = 1  # a limit hit is never an exit 0
    run = _result("TimeLimitExceeded" if timed_out else "Finished", ex.wall_seconds, code, _text(ex.stdout),
                  _text(ex.stderr), ex.cpu_seconds, status_detail=ex.status.value, detail=ex.detail,
                  signal=ex.signal, memory_bytes=ex.peak_memory_bytes, stdout_truncated=ex.stdout_truncated)
    files = {k: base64.b64encode(v).decode("ascii") for k, v in once.files.items()}
    if ex.status is Status.OK:
        return _answer("Success", "", compile_result, run, files)
    return _answer("Failed", ex.detail or ex.status.value, compile_result, run, files)
