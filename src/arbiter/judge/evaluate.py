"""The verdict on one case from the sandbox's :class:`~arbiter.sandbox.execution.Execution`.

- the sandbox's ``time_limit`` / ``memory_limit`` / ``output_limit`` are TLE / MLE / OLE;
- a non-zero exit status or a fatal signal is RE, even when stdout matched;
- an exception inside a called function is RE, whatever the expected value;
- a function's return value is serialised to JSON inside the sandbox and compared here (never
  through the program's own ``__eq__``); a value that cannot be serialised is WA; if serialising
  it crashes the process, RE;
- the JSON is decoded without the 4300-digit int limit (:mod:`arbiter.judge.jsonvalues`); a value
  nested deeper than the judge can decode, or holding a longer integer, is WA;
- a result whose decoding could take more than :data:`DECODE_BUDGET` bytes is first counted (in
  C, nothing decoded): more items than every expected value has is WA undecoded
  (``docs/parsers.md``);
- otherwise the task's checker decides AC or WA.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arbiter.checkers.compare import check_output, compare_values
from arbiter.checkers.result import CheckResult
from arbiter.checkers.spec import CheckerSpec
from arbiter.judge import jsonvalues
from arbiter.judge.jsonvalues import IntegerTooLong, JsonTooDeep
from arbiter.judge.jsonvalues import loads as loads_json
from arbiter.judge.testsuite import CallCase, TestCase
from arbiter.judge.verdict import CaseResult, Outcome
from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.limits import MiB

if TYPE_CHECKING:
    from arbiter.judge.checker_program import ExternalChecker

_STATUS_OUTCOME = {
    Status.TIME_LIMIT: Outcome.TLE,
    Status.MEMORY_LIMIT: Outcome.MLE,
    Status.OUTPUT_LIMIT: Outcome.OLE,
    Status.RUNTIME_ERROR: Outcome.RE,
}
STDERR_TAIL = 600  # bytes of stderr quoted in an RE's detail
#: How the sandbox's call harness starts the JSON of a returned value (``json.dumps`` of
#: ``{"ok": True, "value": ...}``, default separators).
_VALUE_PREFIX = b'{"ok": true, "value": '
#: A call's result whose decoding may cost more than this (bytes, :func:`_decode_cost`) is first
#: checked against the expected values' size (:func:`_json_items`) before it is decoded.
DECODE_BUDGET = 128 * MiB
_ITEM_MARKS = (b"[", b"{", b",", b":")


def text_tail(data: bytes, n: int = STDERR_TAIL) -> str:
    text = data[-n:].decode("utf-8", "replace").strip()
    return text


def evaluate_case(case: TestCase, ex: Execution, checker: CheckerSpec,
                  external: ExternalChecker | None = None) -> CaseResult:
    """The verdict on one case from the sandbox's :class:`Execution` (see the module docstring).

    Raises nothing; a failed external checker yields ``SANDBOX_ERROR``.
    """
    res = CaseResult(name=case.name, outcome=Outcome.AC, cpu_seconds=ex.cpu_seconds,
                     wall_seconds=ex.wall_seconds, memory_bytes=ex.peak_memory_bytes,
                     exit_code=ex.exit_code, signal=ex.signal, run_delay_seconds=ex.run_delay_seconds,
                     server_delay_seconds=ex.server_delay_seconds)
    if ex.status is Status.SANDBOX_ERROR:
        res.outcome, res.detail = Outcome.SANDBOX_ERROR, ex.detail
        return res
    if isinstance(case, CallCase):
        return _evaluate_call(case, ex, checker, res)
    if ex.status is not Status.OK:
        res.outcome = _STATUS_OUTCOME[ex.status]
        res.detail = ex.detail
        if ex.status is Status.RUNTIME_ERROR and ex.stderr:
            res.detail += ": " + text_tail(ex.stderr)
        return res
    if external is not None:
        result = external.check(case, ex.stdout)
        if result is None:
            res.outcome, res.detail = Outcome.SANDBOX_ERROR, external.error or "the checker's sandbox failed"
            return res
        if isinstance(result, str):  # the task's checker is broken: never the program's fault
            res.outcome, res.detail = Outcome.INVALID_TASK, result
            return res
    else:
        result = check_output(checker, ex.stdout, case.expected)
    if not result.ok:
        res.outcome, res.diff = Outcome.WA, result.diff
    return res


def _json_items(data: bytes | str, start: int = 0, end: int | None = None) -> int:
    """The number of ``[``, ``{``, ``,`` and ``:`` in ``data[start:end]``: at least one per
    container, array item and object member of the JSON there (strings may add more), counted
    in C without decoding."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    end = len(data) if end is None else end
    return sum(data.count(m, start, end) for m in _ITEM_MARKS)


def _decode_cost(data: bytes) -> int:
    """An upper bound of the memory ``json.loads(data)`` takes in the judge process (bytes): at
    most one object of at most about 100 bytes per :func:`_json_items` mark (an empty list
    costs 80), plus the text decoded (a str copy, then the strings)."""
    return 100 * _json_items(data) + 3 * len(data)


def _too_large_to_match(case: CallCase, result: bytes) -> str:
    """Why the harness's ``{"ok": true, "value": ...}`` result cannot match any expected value,
    without decoding it; ``""`` when it might. A value equal to an expected one has exactly its
    containers, items and members (numbers and strings hold no marks, and the same strings hold
    the same ones), so more :func:`_json_items` than every expected value's canonical JSON
    cannot match (duplicate object keys are counted as written)."""
    items = _json_items(result, len(_VALUE_PREFIX), len(result) - 1)
    most = -1
    for want in case.expected:
        try:
            most = max(most, _json_items(jsonvalues.dumps(want)))
        except (TypeError, ValueError, RecursionError):
            return ""
    if items <= most:
        return ""
    return (f"the return value is too large to match: its {len(result):,} bytes of JSON hold {items:,} "
            f"containers/items/members, the expected value{'s' if len(case.expected) > 1 else ''} at most "
            f"{max(most, 0):,} (not decoded: that would take up to {_decode_cost(result) // MiB:,} MiB)")


def _evaluate_call(case: CallCase, ex: Execution, checker: CheckerSpec, res: CaseResult) -> CaseResult:
    if ex.status in (Status.TIME_LIMIT, Status.MEMORY_LIMIT, Status.OUTPUT_LIMIT):
        res.outcome, res.detail = _STATUS_OUTCOME[ex.status], ex.detail
        return res
    if ex.result and _decode_cost(ex.result) > DECODE_BUDGET:
        # judge-side memory stays bounded: only a value that may match is decoded
        if not (ex.result.startswith(_VALUE_PREFIX) and ex.result.endswith(b"}")):
            res.outcome = Outcome.RE  # the harness's other payloads are short: not its result
            res.detail = (f"the call's result ({len(ex.result):,} bytes) is not the harness's return value"
                          + (f" ({ex.detail})" if ex.detail else ""))
            return res
        why = _too_large_to_match(case, ex.result)
        if why:
            if ex.status is Status.RUNTIME_ERROR:  # returned, then the process died
                res.outcome, res.detail = Outcome.RE, ex.detail
            else:
                res.outcome, res.diff = Outcome.WA, why
            return res
    payload = None
    if ex.result:
        try:
            payload = loads_json(ex.result)
        except (JsonTooDeep, IntegerTooLong) as exc:
            # Valid JSON the judge process cannot hold: nested deeper than its recursion limit
            # or an integer over the digit cap. No expected value decoded from JSON is that
            # deep or that long, so a returned value of this kind cannot match: WA (RE when
            # the process failed; anything else is not the harness's value payload: RE below).
            if ex.status is Status.OK and ex.result.startswith(_VALUE_PREFIX):
                res.outcome = Outcome.WA
                res.diff = f"the return value cannot be compared: {exc}"
                return res
            payload = None
        except ValueError:
            payload = None
    if not isinstance(payload, dict):
        res.outcome = Outcome.RE
        res.detail = (ex.detail or "the function did not return") + (
            ": " + text_tail(ex.stderr) if ex.stderr else "")
        return res
    if not payload.get("ok"):
        res.outcome = Outcome.RE  # an exception in the call is RE, whatever the expected value
        res.detail = f"exception: {str(payload.get('error', ''))[:500]}"
        return res
    if ex.status is Status.RUNTIME_ERROR:  # returned, then the process died (os._exit(1), ...)
        res.outcome, res.detail = Outcome.RE, ex.detail
        return res
    if "unserializable" in payload:  # (str(): the payload's fields are not trusted to be strings)
        res.outcome = Outcome.WA
        res.diff = (f"returned a {str(payload.get('type', 'value'))[:60]} that is not a JSON value "
                    f"({str(payload['unserializable'])[:200]})")
        return res
    value = payload.get("value")
    first: CheckResult | None = None
    for want in case.expected:
        r = compare_values(value, want, checker.abs_tol, checker.rel_tol, strict_bool=checker.strict_bool)
        if r.ok:
            return res
        if first is None:
            first = r
    res.outcome = Outcome.WA
    res.diff = first.diff if first is not None else "no expected value"
    return res
