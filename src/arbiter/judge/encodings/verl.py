"""verl ``reward_model.ground_truth`` suites: the three encodings of the codegen card.

A ``{"inputs", "outputs"}`` dict (via :func:`arbiter.judge.encodings.apps.inputs_outputs_to_suite`),
a ``stdin_stdout`` case list or a ``function_call`` case list; every other shape raises
:class:`InvalidTestSuite` (convert-or-fail). The encodings and rules: ``docs/encodings.md``, "verl".
"""

from __future__ import annotations

from typing import Any

from arbiter.judge.encodings._common import call_args, decode_json_text, fail, finish, text_to_bytes, to_plain, type_name
from arbiter.judge.encodings.apps import int_key_first_arg, int_key_output, inputs_outputs_to_suite
from arbiter.judge.testsuite import CallCase, StdioCase, TestCase, TestSuite, node_type

CASE_TYPES = ("stdin_stdout", "function_call")


def _function_call_case(item: dict, i: int, row: str, int_keys: bool) -> CallCase:
    field = f"ground_truth[{i}]"
    missing = [k for k in ("fn_name", "input", "output") if k not in item]
    if missing:
        fail(row, field, f"function_call case lacks {missing}")
    fn_name = item["fn_name"]
    if not isinstance(fn_name, str) or not fn_name:
        fail(row, f"{field}.fn_name", f"expected a non-empty string, got {type_name(fn_name)}")
    output = item["output"]
    if not isinstance(output, list) or len(output) != 1:
        shape = f"a list of {len(output)} items" if isinstance(output, list) else type_name(output)
        fail(row, f"{field}.output", f"expected [return_value] (a one-element list, codegen card), got {shape}")
    args = call_args(item["input"], row, f"{field}.input")
    node_args, node_return = _nodes(item, len(args), row, field)
    return CallCase(
        name=str(i),
        fn_name=fn_name,
        args=args,
        expected=(int_key_output(output)[0] if int_keys else output[0],),
        node_args=node_args,
        node_return=node_return,
        int_keys=int_keys and int_key_first_arg(args),
    )


def _nodes(item: dict, n_args: int, row: str, field: str) -> tuple[tuple | None, str | None]:
    """A case's optional ``node_args`` / ``node_return`` (LeetCode rows): absent, the harness
    falls back to the program's annotations; present, they decide (docs/encodings.md)."""
    if "node_args" not in item:
        if "node_return" in item:
            fail(row, f"{field}.node_return", "given without node_args")
        return None, None
    kinds = item["node_args"]
    if not isinstance(kinds, list) or len(kinds) != n_args:
        fail(row, f"{field}.node_args", f"expected a list of {n_args} items (one per input argument), "
                                        f"got {type_name(kinds)}")
    for j, kind in enumerate(kinds + [item.get("node_return")]):
        if kind is not None and not node_type(kind):
            where = f"node_args[{j}]" if j < n_args else "node_return"
            fail(row, f"{field}.{where}", f"expected null or ListNode, TreeNode, List[...] of one, got {kind!r:.60}")
    return tuple(kinds), item.get("node_return")


def _stdin_stdout_case(item: dict, i: int, row: str) -> StdioCase:
    field = f"ground_truth[{i}]"
    missing = [k for k in ("input", "output") if k not in item]
    if missing:
        fail(row, field, f"stdin_stdout case lacks {missing}")
    return StdioCase(
        name=str(i),
        stdin=text_to_bytes(item["input"], row, f"{field}.input"),
        expected=(text_to_bytes(item["output"], row, f"{field}.output"),),
    )


def verl_ground_truth_to_suite(ground_truth: Any, *, row: str, int_keys: bool = False) -> TestSuite:
    """Normalise a verl ``reward_model.ground_truth`` into a :class:`TestSuite`.

    - ``ground_truth``: the JSON string the card specifies, or already-decoded data (dict/list),
      including numpy arrays, numpy scalars and pyarrow values as verl/pandas hand them over from
      Parquet (converted by duck typing, numpy is never imported).
    - ``row``: a label for error messages (e.g. ``extra_info.index``).

    Shapes and their rules: docs/encodings.md. For ``function_call`` cases ``output``
    must be a one-element list ``[return_value]`` and only ``return_value`` is accepted (the
    card's encoding; rllm's primeintellect path, which goes through TACO's
    ``ret == output or ret == output[0]``, would also accept the wrapper itself; a wrapper that
    is not one element long is an error, never guessed at). Each case carries its own
    ``fn_name``. ``int_keys``: the row's route follows APPS/TACO ``testing_util``, which makes a
    call case's dict first argument and dict output int-keyed
    (:func:`arbiter.judge.encodings.apps.inputs_outputs_to_suite`; docs/encodings.md).

    Raises :class:`InvalidTestSuite` naming the row and the field for: invalid JSON, a top-level
    value that is neither an object nor a list, a list item that is not an object, a missing or
    unknown ``type``, mixed types in one list, a missing key, a bad input/output shape,
    mismatched ``inputs``/``outputs`` lengths, or zero cases.
    """
    data = to_plain(decode_json_text(to_plain(ground_truth), row, "ground_truth"))
    if isinstance(data, dict):
        return inputs_outputs_to_suite(data, row=row, origin="verl:dict", field="ground_truth", int_keys=int_keys)
    if not isinstance(data, list):
        fail(
            row,
            "ground_truth",
            f"expected an {{inputs, outputs}} object or a list of case objects, got {type_name(data)}",
        )
    if not data:
        fail(row, "ground_truth", "zero test cases (empty list); a suite without tests is never scored")
    kinds: set[str] = set()
    cases: list[TestCase] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            fail(row, f"ground_truth[{i}]", f"expected a case object, got {type_name(item)}")
        kind = item.get("type")
        if kind not in CASE_TYPES:
            what = "missing 'type'" if "type" not in item else f"unknown type {kind!r}"
            fail(row, f"ground_truth[{i}].type", f"{what}; known: {', '.join(CASE_TYPES)}")
        kinds.add(kind)
        if len(kinds) > 1:
            fail(row, "ground_truth", f"mixed case types {sorted(kinds)} in one suite (first change at item {i})")
        cases.append(_function_call_case(item, i, row, int_keys) if kind == "function_call"
                     else _stdin_stdout_case(item, i, row))
    return finish(cases, row, f"verl:{kinds.pop()}", "ground_truth")
