"""APPS / TACO ``input_output`` suites: ``{"inputs": [...], "outputs": [...][, "fn_name": name]}``.

Also verl's first ground-truth encoding (:mod:`.verl` reuses :func:`inputs_outputs_to_suite`).
A one-element output ``[x]`` of a call case accepts ``x`` or ``[x]`` (the datasets' own harness
rule); dict keys are made ints where the harness makes them so (``int_keys``); the conventions
and their sources: ``docs/encodings.md``, "APPS / TACO".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arbiter.judge.encodings._common import call_args, decode_json_text, fail, finish, text_to_bytes, to_plain, type_name
from arbiter.judge.testsuite import CallCase, StdioCase, TestCase, TestSuite


def wrapped_answers(output: Any) -> tuple[Any, ...]:
    """Accepted return values for an APPS/TACO call-based output: ``(x, [x])`` for ``[x]``, else ``(output,)``."""
    if isinstance(output, list) and len(output) == 1:
        return (output[0], output)
    return (output,)


def int_keyed(value: Any) -> dict | None:
    """``{int(k): v}`` of a dict whose every key ``int()`` accepts, else ``None`` (not a dict, or
    a key ``int()`` refuses: APPS/TACO ``testing_util`` then leaves the value as it is)."""
    if type(value) is not dict:
        return None
    try:
        return {int(k): v for k, v in value.items()}
    except Exception:  # (testing_util's bare except: ValueError, TypeError, OverflowError)
        return None


def int_key_output(output: Any) -> Any:
    """APPS/TACO ``testing_util``'s expected output with int keys: a dict ``d``, or ``[d]``, whose
    keys ``int()`` all accept becomes ``[{int(k): v}]`` (so ``d`` and ``[d]`` are accepted, as
    there); anything else is kept. (A longer list starting with such a dict is kept too: the
    harness cuts it to ``[d]``, refusing the full list; docs/encodings.md.)"""
    keyed = int_keyed(output)
    if keyed is None and type(output) is list and len(output) == 1:
        keyed = int_keyed(output[0])
    return output if keyed is None else [keyed]


def int_key_first_arg(args: tuple[Any, ...]) -> bool:
    """Whether the harness re-keys the first argument (:attr:`CallCase.int_keys`): a non-empty
    dict of string keys (as JSON gives) that ``int()`` all accept."""
    first = args[0] if args else None
    return type(first) is dict and bool(first) and all(type(k) is str for k in first) and int_keyed(first) is not None


def inputs_outputs_to_suite(data: Any, *, row: str, origin: str, field: str = "input_output",
                            int_keys: bool = False) -> TestSuite:
    """Normalise an ``{"inputs", "outputs"[, "fn_name"]}`` dict (already JSON-decoded).

    ``inputs`` and ``outputs`` must be lists of the same, non-zero length. A call case whose input
    is text (one JSON argument per line) has its output as JSON text too, decoded (verl
    ``prime_code``'s convention, and LiveCodeBench's). Returns a suite of
    :class:`StdioCase` (names ``"0"``, ``"1"``, ...) or of :class:`CallCase` (``fn_name`` from the
    dict). ``int_keys`` (APPS/TACO ``testing_util``'s rule, the route's to choose): a dict
    first argument and a dict output get int keys (:func:`int_key_output`,
    :func:`int_key_first_arg`). Raises :class:`InvalidTestSuite` naming ``row`` and ``field`` for
    a missing key, a non-list, mismatched lengths, a bad input/output shape or zero cases.
    """
    data = to_plain(data)
    if not isinstance(data, dict):
        fail(row, field, f"expected an object with 'inputs' and 'outputs', got {type_name(data)}")
    missing = [k for k in ("inputs", "outputs") if k not in data]
    if missing:
        fail(row, field, f"missing key(s) {missing}; keys present: {sorted(map(str, data))}")
    inputs, outputs = data["inputs"], data["outputs"]
    for key, value in (("inputs", inputs), ("outputs", outputs)):
        if not isinstance(value, list):
            fail(row, f"{field}.{key}", f"expected a list, got {type_name(value)}")
    if len(inputs) != len(outputs):
        fail(row, field, f"{len(inputs)} inputs but {len(outputs)} outputs")
    fn_name = data.get("fn_name")
    cases: list[TestCase] = []
    if fn_name is None or fn_name == "":
        for i, (stdin, stdout) in enumerate(zip(inputs, outputs)):
            cases.append(
                StdioCase(
                    name=str(i),
                    stdin=text_to_bytes(stdin, row, f"{field}.inputs[{i}]"),
                    expected=(text_to_bytes(stdout, row, f"{field}.outputs[{i}]"),),
                )
            )
        return finish(cases, row, origin, field)
    if not isinstance(fn_name, str):
        fail(row, f"{field}.fn_name", f"expected a string, got {type_name(fn_name)}")
    for i, (args, output) in enumerate(zip(inputs, outputs)):
        if isinstance(args, str) and isinstance(output, str):  # JSON lines in, JSON text out
            output = decode_json_text(output, row, f"{field}.outputs[{i}]")
        decoded = call_args(args, row, f"{field}.inputs[{i}]")
        cases.append(
            CallCase(
                name=str(i),
                fn_name=fn_name,
                args=decoded,
                expected=wrapped_answers(int_key_output(output) if int_keys else output),
                int_keys=int_keys and int_key_first_arg(decoded),
            )
        )
    return finish(cases, row, origin, field)


def apps_input_output_to_suite(input_output: Any, *, row: str) -> TestSuite:
    """Normalise an APPS/TACO ``input_output`` value: the JSON text of ``input_output.json`` (or
    the TACO column), or the decoded dict. Origin ``apps``; dict keys as APPS/TACO's own harness
    has them (``int_keys``). See the module conventions; errors as
    :func:`inputs_outputs_to_suite`, plus invalid JSON."""
    data = decode_json_text(input_output, row, "input_output")
    return inputs_outputs_to_suite(data, row=row, origin="apps", int_keys=True)


def load_apps_problem(directory: str | Path) -> TestSuite:
    """The suite of one APPS problem folder (``<dir>/input_output.json``); the row label is the
    folder name. Raises :class:`InvalidTestSuite` (also when the file is missing)."""
    directory = Path(directory)
    path = directory / "input_output.json"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        fail(directory.name, "input_output.json", f"cannot read {path} ({exc.strerror or exc})")
    return apps_input_output_to_suite(text, row=directory.name)


__all__ = ["apps_input_output_to_suite", "inputs_outputs_to_suite", "int_key_first_arg", "int_key_output", "int_keyed",
           "load_apps_problem", "wrapped_answers"]
