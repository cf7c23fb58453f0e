"""SandboxFusion's ``POST /run_code``: the request and answer as the ``sandbox-fusion`` client and
verl's sandbox_fusion reward send and read them, run through :func:`arbiter.judge.run_once.run_once`.
What each status means: ``docs/serve.md``."""

from __future__ import annotations

import base64
import binascii
import hashlib
import posixpath
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Optional

from pydantic import BaseModel, Field

from arbiter.judge.run_once import RunOnce, WarmSandboxes, run_once, supported_languages
from arbiter.judge.testsuite import str_to_bytes
from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.server import answer
from arbiter.server.config import ServerConfig

#: ``fetch_files`` entries per request at most.
MAX_FETCH = 64
#: Bytes of a file name at most (the kernel's NAME_MAX).
NAME_MAX = 255


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
    """A request the service refuses with 422 (the message names the field; ``413:`` first: 413)."""


class OurFailure(Exception):
    """arbiter itself failed to run the program (answered 504 so that clients retry)."""


@dataclass(frozen=True)
class PreparedRun:
    """A checked request, ready to run: what :func:`run_once` takes, and its program's key."""

    language: str
    code: str
    stdin: bytes
    limits: Limits
    compile_seconds: float
    files: dict[str, bytes]
    fetch: tuple[str, ...]
    key: str
    spelled: tuple[tuple[str, str], ...] = ()  # fetched name -> the path the request first gave for it


def utf8_bytes(value: str, field: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest(f"{field}: not valid Unicode text (a lone surrogate at character {exc.start})") from None


def _limits(req: RunCodeRequest, cfg: ServerConfig) -> Limits:
    for name in ("run_timeout", "compile_timeout"):
        value = getattr(req, name)
        if not 0 < value <= cfg.max_seconds:
            raise BadRequest(f"{name} must be in (0, {cfg.max_seconds:g}] seconds, got {value:g}")
    mb = cfg.default_memory_mb if req.memory_limit_MB is None or req.memory_limit_MB <= 0 else req.memory_limit_MB
    if mb > cfg.max_memory_mb:
        raise BadRequest(f"memory_limit_MB must be at most {cfg.max_memory_mb}, got {mb:g}")
    # run_timeout is wall time, as SandboxFusion's (and the CPU limit too)
    return Limits(cpu_seconds=req.run_timeout, wall_seconds=req.run_timeout, memory_bytes=int(mb * MiB),
                  output_bytes=cfg.max_output_bytes)


def _name(name: str, field: str) -> str:
    if "\0" in name or "/" in name or name in ("", ".", ".."):
        raise BadRequest(f"{field}: {name[:80]!r} is not a plain file name (no '/', no NUL, not '.' or '..')")
    if len(utf8_bytes(name, field)) > NAME_MAX:
        raise BadRequest(f"{field}: a file name of at most {NAME_MAX} bytes, got {len(name.encode())}")
    return name


def request_files(req: RunCodeRequest) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name, data in req.files.items():
        field = f"files[{name[:80]!r}]"
        _name(name, field)
        out[name] = from_base64(data or "", field)
    return out


def from_base64(text: str, field: str) -> bytes:
    """``base64.b64decode(text, validate=True)`` without its ASCII copy of ``text`` (binascii
    reads an ASCII ``str`` in place): a 53 MiB file costs its decoded 40 MiB, not 93."""
    try:
        if sys.version_info < (3, 11):  # no strict_mode: b64decode's own check, with its copy
            return base64.b64decode(text, validate=True)
        return binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{field}: not base64") from None


def fetch_paths(req: RunCodeRequest) -> dict[str, str]:
    """Plain names in the working directory (``x``, ``./x``, ``/work/x``), each once: name -> the
    first path the request gave for it."""
    if len(req.fetch_files) > MAX_FETCH:
        raise BadRequest(f"fetch_files: at most {MAX_FETCH} paths, got {len(req.fetch_files)}")
    names: dict[str, str] = {}
    for i, path in enumerate(req.fetch_files):
        norm = posixpath.normpath(posixpath.join("/work", path)) if "\0" not in path else path
        if not norm.startswith("/work/") or "/" in norm[6:]:
            raise BadRequest(f"fetch_files[{i}]: {path[:80]!r} is not a file of the working directory "
                             f"(files in sub-folders or elsewhere are not returned)")
        names.setdefault(_name(norm[6:], f"fetch_files[{i}]"), path)
    return names


def prepare(req: RunCodeRequest, cfg: ServerConfig) -> PreparedRun:
    """The checked request; :class:`BadRequest` naming the field refused."""
    limits, files, fetch = _limits(req, cfg), request_files(req), fetch_paths(req)
    # a lone surrogate in the code is the program's CE (languages.source_bytes), in stdin its bytes
    code, stdin = req.code.encode("utf-8", "surrogatepass"), str_to_bytes(req.stdin or "")
    h = hashlib.sha256()
    for part in (req.language.encode("utf-8", "replace"), code, repr(sorted((k, hashlib.sha256(v).hexdigest())
                 for k, v in files.items())).encode(), repr((fetch, limits, req.compile_timeout)).encode()):
        h.update(part + b"\0")
    return PreparedRun(req.language, req.code, stdin, limits, req.compile_timeout, files, tuple(fetch), h.hexdigest(),
                    tuple(fetch.items()))


def warm_sandboxes(cfg: ServerConfig) -> WarmSandboxes:
    """The service's idle sandboxes of recent programs, shared by its judge slots (two per slot)."""
    return WarmSandboxes(capacity=2 * cfg.workers, idle_seconds=60, per_program=1 << 30, wait_seconds=0)


def run_code(p: PreparedRun, cfg: ServerConfig, warm: WarmSandboxes, tenant: str,
             cases_run: Callable[[int], None] = lambda n: None) -> BinaryIO:
    """Run the request on a judge slot (with the warm sandbox of its program and ``tenant``, if one
    is idle: a session is never shared between tenants); the
    SandboxFusion answer, spooled. Raises :class:`OurFailure` (504: our sandbox failed after retries).
    ``cases_run(1)`` when the program was run (not for a compile error or an unknown language)."""
    if p.language not in supported_languages():
        return answer.spool(_answer("SandboxError", f"language {p.language!r} is not supported by arbiter; "
                                                    f"supported: {', '.join(supported_languages())}"))
    try:
        once = run_once(p.language, p.code, p.stdin, p.limits, compile_seconds=p.compile_seconds, files=p.files,
                        fetch=p.fetch, warm=warm, fetch_bytes=cfg.max_output_bytes, owner=tenant)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    cases_run(0 if once.execution is None else 1)
    if once.sandbox_error:
        raise OurFailure(once.sandbox_error)
    spelled = dict(p.spelled)
    once.files = {spelled.get(k, k): v for k, v in once.files.items()}
    once.files_omitted = {spelled.get(k, k): v for k, v in once.files_omitted.items()}
    return answer.spool(dict(to_answer(once), executor_pod_name=cfg.node))


def _stream(data: bytes, name: str, extra: dict[str, Any]) -> Any:
    """A stream as text, or (past the text-size bound) a marker and its base64 in ``extra``."""
    if answer.fits_as_text(data):
        return answer.Raw(data, True)
    extra[f"{name}_base64"] = answer.Raw(data, False)
    return f"[arbiter: {len(data)} bytes that are not text; base64 in run_result.arbiter.{name}_base64]"


def _result(status: str, seconds: float | None, code: int | None, stdout: Any, stderr: Any,
            cpu: float | None = None, **arbiter: Any) -> dict[str, Any]:
    return {"status": status, "execution_time": seconds, "cpu_time": cpu, "return_code": code, "stdout": stdout,
            "stderr": stderr, "arbiter": arbiter}


def _answer(status: str, message: str, compile_result: dict | None = None, run_result: dict | None = None,
            files: dict[str, Any] | None = None, omitted: dict[str, str] | None = None) -> dict[str, Any]:
    out = {"status": status, "message": message, "compile_result": compile_result, "run_result": run_result,
           "executor_pod_name": None, "files": files or {}}
    if omitted:
        out["arbiter"] = {"files_omitted": omitted}
    return out


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
    extra: dict[str, Any] = dict(status_detail=ex.status.value, detail=ex.detail, signal=ex.signal,
                                 memory_bytes=ex.peak_memory_bytes, stdout_truncated=ex.stdout_truncated)
    stdout, stderr = _stream(ex.stdout, "stdout", extra), _stream(ex.stderr, "stderr", extra)
    run = _result("TimeLimitExceeded" if timed_out else "Finished", ex.wall_seconds, code, stdout, stderr,
                  ex.cpu_seconds, **extra)
    files = {k: answer.Raw(v, False) for k, v in once.files.items()}
    status, message = ("Success", "") if ex.status is Status.OK else ("Failed", ex.detail or ex.status.value)
    return _answer(status, message, compile_result, run, files, once.files_omitted)
