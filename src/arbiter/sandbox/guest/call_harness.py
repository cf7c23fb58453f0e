"""The call harness: find the function a call case names, convert LeetCode arguments and results.

``Solution().fn`` or the top-level ``fn``; ``ListNode`` / ``TreeNode`` from and to lists (where
the case's node types say, else where the program's annotations do); an APPS/TACO row's dict
first argument with int keys (where the case says); numpy values to JSON numbers and lists.
Exports: :func:`find_function`, :func:`convert_args`, :func:`int_keyed_first`,
:func:`returns_node`, :func:`check_node_return`, :func:`plain_default`. See docs/sandbox.md ("mode: call").
"""

import sys

#: The ``__name__`` a call case runs the program under: imported, not run as a script, as the call
#: harnesses of APPS/TACO, verl's prime_code and LiveCodeBench import it (their module
#: ``tmp_sol``), so an ``if __name__ == "__main__":`` block (a model's own test, often reading
#: stdin) does not run. This name, the one a ``multiprocessing`` spawn child gives the main
#: script, keeps pools working: a function pickled as ``__mp_main__.f`` is found in a forked
#: child (the case registers the module under it) and in a spawn child (which runs the file
#: under it).
CALL_MODULE_NAME = "__mp_main__"


def find_function(g, fn_name):
    """``Solution().fn_name`` when ``class Solution`` defines it, else the top-level function
    (TACO/LiveCodeBench/verl call-based convention)."""
    sol = g.get("Solution")
    if isinstance(sol, type) and callable(getattr(sol, fn_name, None)):
        return getattr(sol(), fn_name)
    fn = g.get(fn_name)
    if callable(fn):
        return fn
    raise NameError("no function %r and no class Solution with that method" % (fn_name,))


def _annotation_texts(fn):
    """Parameter annotations as normalised text (``Optional[ListNode]`` -> ``ListNode``)."""
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], {}
    order, by_name = [], {}
    for p in sig.parameters.values():
        text = _ann_text(p.annotation)
        order.append(text)
        by_name[p.name] = text
    return order, by_name


def returns_node(g, fn, spec):
    """True when the call ``spec`` says the return value is a ``ListNode`` / ``TreeNode`` (its
    ``node_args`` given: the row's); a spec that does not say: when ``fn`` is annotated to return
    one."""
    if "ListNode" not in g and "TreeNode" not in g:
        return False
    if "node_args" in spec:
        return spec.get("node_return") in ("ListNode", "TreeNode")
    import inspect
    try:
        ann = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):
        return False
    return _unwrap_optional(_ann_text(ann)) in ("ListNode", "TreeNode")


def _ann_text(ann):
    """An annotation as text without module prefixes: ``Optional[ListNode]``, ``List[int]``."""
    import re
    text = ann if isinstance(ann, str) else ann.__name__ if isinstance(ann, type) else repr(ann)
    return re.sub(r"\b(?:typing|__main__|%s|builtins)\." % CALL_MODULE_NAME, "", text).replace(" ", "")


def _unwrap_optional(text):
    while True:
        if text.startswith("Optional[") and text.endswith("]"):
            text = text[len("Optional["):-1]
        elif text.endswith("|None"):
            text = text[:-len("|None")]
        elif text.startswith("None|"):
            text = text[len("None|"):]
        else:
            return text


def convert_args(g, fn, spec):
    """The call ``spec``'s ``(args, kwargs)``. LeetCode linked lists and trees travel as lists;
    build ``ListNode`` / ``TreeNode`` objects (from the program's or prelude's classes) where
    the spec's ``node_args`` (the row's, one per argument) say so, else where the parameter is
    annotated so. The spec's ``int_keys`` (the row's route: APPS/TACO): the first argument's
    keys made ints (:func:`int_keyed_first`)."""
    args, kwargs = spec.get("args", []), spec.get("kwargs", {})
    if spec.get("int_keys"):
        args = int_keyed_first(args)
    if "node_args" in spec:
        kinds = spec["node_args"]
        if len(args) != len(kinds):
            raise ValueError("node_args does not match the arguments")
        return [_from_plain(g, k or "", v) for k, v in zip(kinds, args)], kwargs
    if "ListNode" not in g and "TreeNode" not in g:
        return args, kwargs
    order, by_name = _annotation_texts(fn)
    args = [_from_plain(g, order[i] if i < len(order) else "", a) for i, a in enumerate(args)]
    kwargs = {k: _from_plain(g, by_name.get(k, ""), v) for k, v in kwargs.items()}
    return args, kwargs


def int_keyed_first(args):
    """``args`` with the first one, a dict, re-keyed ``{int(k): v}``: APPS/TACO ``testing_util``
    ("JSON forces dictionaries to have string keys; this undoes this"). A key ``int()`` refuses
    leaves the arguments as they are, as there (its ``try`` swallows the error). Unlike there, the
    other arguments are kept (it calls the function with the dict alone)."""
    if not args or type(args[0]) is not dict:
        return args
    try:
        first = {int(k): v for k, v in args[0].items()}
    except Exception:
        return args
    return [first] + list(args[1:])


def _from_plain(g, ann, value):
    ann = _unwrap_optional(ann)
    if not isinstance(value, list):
        return value
    for prefix in ("List[", "list["):
        if ann.startswith(prefix) and ann.endswith("]"):
            inner = ann[len(prefix):-1]
            return [_from_plain(g, inner, v) for v in value]
    if ann == "ListNode" and g.get("ListNode") is not None:
        cls = g["ListNode"]
        head = None
        for v in reversed(value):
            node = cls(v)
            node.next = head
            head = node
        return head
    if ann == "TreeNode" and g.get("TreeNode") is not None:
        cls = g["TreeNode"]
        if not value or value[0] is None:
            return None
        root = cls(value[0])
        queue, qi, i = [root], 0, 1
        while qi < len(queue) and i < len(value):
            node = queue[qi]
            qi += 1
            if i < len(value) and value[i] is not None:
                node.left = cls(value[i])
                queue.append(node.left)
            i += 1
            if i < len(value) and value[i] is not None:
                node.right = cls(value[i])
                queue.append(node.right)
            i += 1
        return root
    return value


def check_node_return(g, value, spec):
    """Raises ``TypeError`` when the row's ``node_return`` (a call ``spec`` with ``node_args``) is a
    node type and ``value`` is not one: a plain list where a ``ListNode`` is due serialises to the
    same JSON, but the dataset's check (``is_same_list``) and LeetCode refuse it."""
    kind = spec.get("node_return") if "node_args" in spec else None
    if kind and not _is_node_value(g, kind, value):
        raise TypeError("a %s where the row returns a %s" % (type(value).__name__, kind))


def _is_node_value(g, kind, value):
    if kind.startswith("List[") and kind.endswith("]"):
        return isinstance(value, (list, tuple)) and all(_is_node_value(g, kind[5:-1], v) for v in value)
    cls = g.get(kind)
    return value is None or (isinstance(cls, type) and isinstance(value, cls))


def plain_default(g, spec):
    """``json.dumps(default=...)`` for values JSON cannot hold natively: ``ListNode`` / ``TreeNode``
    become their list forms (LeetCode: level order, trailing nulls dropped); numpy scalars and
    arrays become Python numbers and lists (APPS/TACO harnesses compare them with ``==``, so
    ``np.int64(6)`` is 6). Anything else (a generator, a custom object) stays unserialisable.
    Where the call ``spec`` has the row's node types (``node_args``), a node is refused when the
    row returns none, and so is a node valued ``None`` (it would read as a missing node)."""
    lcls, tcls = g.get("ListNode"), g.get("TreeNode")
    nodes = tuple(c for c in (lcls, tcls) if isinstance(c, type))
    row_says = "node_args" in spec
    nodes_due = not row_says or bool(spec.get("node_return"))
    np = sys.modules.get("numpy")

    def default(value):
        if nodes and isinstance(value, nodes):
            if not nodes_due:
                raise TypeError("a %s where the row returns no node" % type(value).__name__)
            if isinstance(lcls, type) and isinstance(value, lcls):
                return _list_form(value, row_says)
            return _tree_form(value, row_says)
        if np is not None and isinstance(value, (np.generic, np.ndarray)):
            return value.tolist()  # np.generic.tolist() is .item()
        raise TypeError("%s is not a JSON value" % type(value).__name__)

    return default


def _null_value(node):
    raise TypeError("a %s valued None (LeetCode values are never null)" % type(node).__name__)


def _list_form(node, strict):
    """A linked list's values, in order (at most 10**6)."""
    out, seen = [], 0
    while node is not None and seen < 10 ** 6:
        if strict and node.val is None:
            _null_value(node)
        out.append(node.val)
        node = node.next
        seen += 1
    return out


def _tree_form(root, strict):
    """A tree in LeetCode's level order, trailing nulls dropped (at most 10**6 slots)."""
    out, queue, qi = [], [root], 0
    while qi < len(queue) and qi < 10 ** 6:
        node = queue[qi]
        qi += 1
        if node is None:
            out.append(None)
            continue
        if strict and node.val is None:
            _null_value(node)
        out.append(node.val)
        queue.append(node.left)
        queue.append(node.right)
    while out and out[-1] is None:
        out.pop()
    return out
