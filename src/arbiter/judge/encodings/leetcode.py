"""LeetCodeDataset (newfacade/LeetCodeDataset) ``input_output`` suites.

Keyword-argument inputs are evaluated by :mod:`arbiter.judge.encodings.pyliteral`; outputs are
``repr`` text except for ``-> str`` methods (bare strings); generator-failure pairs are dropped
(:attr:`LeetCodeSuite.dropped`); list/tree arguments stay level-order lists and
:class:`LeetCodeSignature` tells the harness which to build into nodes. The encoding and the
reasons for each rule: ``docs/encodings.md``, "LeetCodeDataset".
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arbiter.judge.encodings._common import fail, finish, to_plain, type_name
from arbiter.judge.encodings.pyliteral import UnsafeLiteral, parse_call_arguments, parse_literal
from arbiter.judge.testsuite import CallCase, TestCase, TestSuite

_ENTRY = re.compile(r"\s*(?:Solution\(\)\.)?([A-Za-z_][A-Za-z0-9_]*)\s*")
_NODE = re.compile(r"\b(ListNode|TreeNode)\b")

#: ``output`` values that mean the generator's reference run failed (pair dropped).
GENERATOR_FAILURE_PREFIX = "Error: "
GENERATOR_TIMEOUT = "Execution timed out"


@dataclass(frozen=True)
class LeetCodeSignature:
    """A method's parameters and return annotation, from ``starter_code``.

    - ``method``: the method name.
    - ``params``: ``(name, annotation source or None)`` per parameter, ``self`` excluded.
    - ``returns``: the return annotation source (``"int"``, ``"List[int]"``,
      ``"Optional[ListNode]"``) or ``None``.
    """

    method: str
    params: tuple[tuple[str, str | None], ...]
    returns: str | None

    @property
    def param_names(self) -> tuple[str, ...]:
        """Parameter names in order (``self`` excluded)."""
        return tuple(name for name, _ in self.params)

    @property
    def node_params(self) -> dict[str, str]:
        """Parameters whose annotation mentions ``ListNode``/``TreeNode``: name -> annotation
        (e.g. ``{"head": "Optional[ListNode]"}``, ``{"lists": "List[Optional[ListNode]]"}``)."""
        return {name: ann for name, ann in self.params if ann and _NODE.search(ann)}

    @property
    def node_return(self) -> str | None:
        """``"ListNode"`` or ``"TreeNode"`` when the method returns such a node, else ``None``."""
        match = _NODE.search(self.returns or "")
        return match.group(1) if match else None

    @property
    def node_types(self) -> tuple[tuple[str | None, ...], str | None]:
        """What the harness builds: per parameter and for the return value, the
        :func:`~arbiter.judge.testsuite.node_type` its annotation asks for (``None``: a plain
        value); ``ValueError`` for a node in a shape no harness builds (``Dict[int, ListNode]``)."""
        return tuple(node_kind(ann) for _, ann in self.params), node_kind(self.returns)

    @property
    def returns_str(self) -> bool:
        """True when the method is annotated ``-> str``: its outputs are bare, unquoted strings."""
        return self.returns == "str"


@dataclass(frozen=True)
class LeetCodeSuite:
    """A normalised LeetCodeDataset row.

    - ``suite``: :class:`CallCase` per kept pair; ``fn_name`` is the method, arguments are
      keyword arguments, ``expected`` is a one-element tuple; case names are the pair's index in
      ``input_output`` (gaps where pairs were dropped).
    - ``signature``: from ``starter_code`` (``None`` when it was not given or has no such method).
    - ``dropped``: one line per pair left out, with the reason (generator failure).
    """

    suite: TestSuite
    signature: LeetCodeSignature | None
    dropped: tuple[str, ...] = ()

    @property
    def needs_node_conversion(self) -> bool:
        """True when arguments or the return value are ``ListNode``/``TreeNode``."""
        return self.signature is not None and bool(self.signature.node_params or self.signature.node_return)


def node_kind(annotation: str | None) -> str | None:
    """``Optional[ListNode]`` -> ``ListNode``, ``List[Optional[TreeNode]]`` -> ``List[TreeNode]``,
    ``int`` or ``None`` -> ``None``; ``ValueError`` for any other annotation naming a node."""
    if not annotation or not _NODE.search(annotation):
        return None
    try:
        kind = _kind(ast.parse(annotation, mode="eval").body)
    except SyntaxError:
        kind = None
    if kind is None:
        raise ValueError(f"annotation {annotation!r} names a node in a shape the harness does not build")
    return kind


def _kind(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _kind(ast.parse(node.value, mode="eval").body)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [s for s in (node.left, node.right) if not (isinstance(s, ast.Constant) and s.value is None)]
        return _kind(sides[0]) if len(sides) == 1 else None
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    if name in ("ListNode", "TreeNode"):
        return name
    if isinstance(node, ast.Subscript):
        outer = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", None)
        inner = _kind(node.slice)
        if outer == "Optional" or inner is None:
            return inner
        return f"List[{inner}]" if outer in ("List", "list") else None
    return None


def _parse_module(code: str) -> ast.Module | None:
    for candidate in (code, code + "pass", code.rstrip() + "\n        pass", code.rstrip() + "\n    pass"):
        try:
            return ast.parse(candidate)
        except SyntaxError:
            continue
    return None


def leetcode_signature(starter_code: str, method: str) -> LeetCodeSignature | None:
    """The signature of ``method`` in ``starter_code`` (a ``class Solution`` stub whose body may be
    empty), or of a top-level function of that name; ``None`` when not found or not parseable."""
    tree = _parse_module(starter_code or "")
    if tree is None:
        return None
    functions: list[ast.FunctionDef] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Solution":
            functions += [f for f in node.body if isinstance(f, ast.FunctionDef)]
        elif isinstance(node, ast.FunctionDef):
            functions.append(node)
    for function in functions:
        if function.name != method:
            continue
        args = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
        params = tuple(
            (a.arg, ast.unparse(a.annotation) if a.annotation is not None else None) for a in args if a.arg != "self"
        )
        returns = ast.unparse(function.returns) if function.returns is not None else None
        return LeetCodeSignature(method=method, params=params, returns=returns)
    return None


def leetcode_method(entry_point: Any, row: str) -> str:
    """The method name of ``Solution().method`` (or a bare function name); else an error."""
    if isinstance(entry_point, str):
        match = _ENTRY.fullmatch(entry_point)
        if match:
            return match.group(1)
    fail(row, "entry_point", f"expected 'Solution().method' or a function name, got {entry_point!r}")


def leetcode_to_suite(input_output: Any, entry_point: str, *, row: str, starter_code: str | None = None) -> LeetCodeSuite:
    """Normalise LeetCodeDataset ``input_output`` pairs (encoding: docs/encodings.md).

    - ``input_output``: list of ``{"input": str, "output": str}``.
    - ``entry_point``: ``Solution().method``.
    - ``starter_code``: the row's stub; gives the return annotation (bare-string outputs) and the
      parameter names (checked against each input's keywords) and node types.

    Raises :class:`InvalidTestSuite` naming the row and ``input_output[i].input``/``.output`` for:
    a non-list, a non-object pair, a non-string field, an input that is not a safe keyword-
    argument list, keywords that differ from the signature's parameters, an output that is not a
    safe literal (non-``str`` methods), or zero kept pairs.
    """
    method = leetcode_method(entry_point, row)
    signature = leetcode_signature(starter_code, method) if starter_code else None
    try:
        node_return = signature.node_types[1] if signature is not None else None
    except ValueError as exc:
        fail(row, "starter_code", str(exc))
    pairs = to_plain(input_output)
    if not isinstance(pairs, list):
        fail(row, "input_output", f"expected a list of {{input, output}} objects, got {type_name(pairs)}")
    cases: list[TestCase] = []
    dropped: list[str] = []
    for i, pair in enumerate(pairs):
        where = f"input_output[{i}]"
        if not isinstance(pair, dict):
            fail(row, where, f"expected an object with 'input' and 'output', got {type_name(pair)}")
        for key in ("input", "output"):
            if not isinstance(pair.get(key), str):
                what = "missing" if key not in pair else f"a {type_name(pair[key])}, not a string"
                fail(row, f"{where}.{key}", what)
        output: str = pair["output"]
        if output.startswith(GENERATOR_FAILURE_PREFIX) or output == GENERATOR_TIMEOUT:
            dropped.append(f"pair {i}: reference run failed in the dataset generator: {output[:100]!r}")
            continue
        try:
            args, kwargs = parse_call_arguments(pair["input"])
        except UnsafeLiteral as exc:
            fail(row, f"{where}.input", f"not a safe keyword-argument list ({exc}): {pair['input'][:80]!r}")
        if signature is not None:
            names = signature.param_names
            given = set(names[: len(args)]) | set(kwargs)
            if len(args) > len(names) or set(kwargs) & set(names[: len(args)]) or given != set(names):
                fail(
                    row,
                    f"{where}.input",
                    f"arguments {sorted(given) if len(args) <= len(names) else pair['input'][:60]!r} "
                    f"do not match the parameters {list(names)} of {method}",
                )
        if signature is not None and signature.returns_str:
            value: Any = output
        else:
            try:
                value = parse_literal(output)
            except UnsafeLiteral as exc:
                fail(row, f"{where}.output", f"not a safe literal ({exc}): {output[:80]!r}")
        if value is None and node_return in ("ListNode", "TreeNode"):
            value = []  # the empty list / tree: the harness returns it as [] (docs/encodings.md)
        cases.append(CallCase(name=str(i), fn_name=method, args=tuple(args), kwargs=kwargs, expected=(value,)))
    return LeetCodeSuite(finish(cases, row, "leetcodedataset", "input_output"), signature, tuple(dropped))


def leetcode_row_to_suite(record: Mapping[str, Any]) -> LeetCodeSuite:
    """:func:`leetcode_to_suite` on a LeetCodeDataset row (``task_id`` is the row label)."""
    row = str(record.get("task_id", "?"))
    for key in ("input_output", "entry_point"):
        if key not in record:
            fail(row, key, "missing")
    return leetcode_to_suite(
        record["input_output"], record["entry_point"], row=row, starter_code=record.get("starter_code")
    )
