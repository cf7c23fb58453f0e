"""Red team 10: call mode as an imported module (f304fcc) and LeetCode node types (5daf127, f55db87, d48af56).

Real sandbox. Rows are converted by ``arbiter convert --from leetcode`` from LeetCodeDataset-format rows with
the dataset's real preamble and judged through the verl reward, as tests/datasets/test_leetcode_nodes.py does.
Each test asserts the right outcome; the ones that say "failed at d48af56" are red team 10's findings, mended
(a node type checked against the row's, a node valued None refused, the vacuous warning for node rows), but the
spawn pool under a row's prelude: known and kept (docs/sandbox.md, "mode: python"), a strict xfail.
"""

from __future__ import annotations

import pytest

from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.limits import Limits
from arbiter.verl.reward import compute_score
from leetcode_rows import converted_rows, dataset_prompt, lc_row


@pytest.fixture(scope="module")
def prompt(shared) -> str:
    return dataset_prompt(shared)


@pytest.fixture(scope="module")
def rows(prompt, tmp_path_factory) -> dict[str, object]:
    raw = [
        lc_row("reverse-linked-list", "reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]",
               "reverseList", [("head = [1,2,3,4,5]", "[5, 4, 3, 2, 1]"), ("head = [1,2]", "[2, 1]"),
                               ("head = []", "None")], prompt),
        lc_row("merge-k-sorted-lists", "mergeKLists(self, lists: List[Optional[ListNode]]) -> Optional[ListNode]",
               "mergeKLists", [("lists = [[1,4,5],[1,3,4],[2,6]]", "[1, 1, 2, 3, 4, 4, 5, 6]"), ("lists = []", "None"),
                               ("lists = [[]]", "None")], prompt),
        lc_row("binary-tree-inorder-traversal", "inorderTraversal(self, root: Optional[TreeNode]) -> List[int]",
               "inorderTraversal", [("root = [1,None,2,3]", "[1, 3, 2]"), ("root = []", "[]"), ("root = [1]", "[1]")],
               prompt),
        # LeetCodeDataset's own LCA rows pass p and q as values and expect None for every pair (its check():
        # `assert candidate(root = tree_node([...]), p = 5, q = 1) == None`): a vacuous suite
        lc_row("lowest-common-ancestor-of-a-binary-tree",
               "lowestCommonAncestor(self, root: 'TreeNode', p: 'TreeNode', q: 'TreeNode') -> 'TreeNode'",
               "lowestCommonAncestor", [("root = [3,5,1,6,2,0,8,None,None,7,4], p = 5, q = 1", "None"),
                                        ("root = [3,5,1,6,2,0,8,None,None,7,4], p = 5, q = 4", "None"),
                                        ("root = [1,2], p = 1, q = 2", "None")], prompt),
    ]
    return converted_rows(raw, tmp_path_factory.mktemp("rt10"), "rows.jsonl")


def score(row, code: str) -> dict:
    return compute_score(row.data_source, f"```python\n{code}```", row.ground_truth, row.extra_info)


# ------------------------------------------------------------------ false passes (wrong return type)

PLAIN_REVERSE = """class Solution:
    def reverseList(self, head):
        out = []
        while head:
            out.append(head.val)
            head = head.next
        return out[::-1]
"""
PLAIN_MERGE = """class Solution:
    def mergeKLists(self, lists):
        vals = []
        for h in lists:
            while h:
                vals.append(h.val)
                h = h.next
        return sorted(vals)
"""


@pytest.mark.parametrize("index,code", [("leetcode_reverse-linked-list", PLAIN_REVERSE),
                                        ("leetcode_merge-k-sorted-lists", PLAIN_MERGE)])
def test_a_node_returning_row_refuses_a_plain_list(rows, index, code):
    """Failed at d48af56 (AC). The row says the method returns a ListNode (node_return); the dataset's check()
    is ``is_same_list(candidate(...), list_node([...]))``, which raises AttributeError on a Python list, and
    LeetCode rejects it. The judge serialises whatever comes back, so a program that never builds the list
    (mergeKLists as ``sorted(all values)``) gets 1.0. Before 5daf127 an unannotated one was RE (arguments not
    built); an annotated one was already accepted."""
    assert score(rows[index], code)["verdict"] != "AC"


NODE_FOR_LIST = """class Solution:
    def inorderTraversal(self, root):
        vals = []
        def go(n):
            if n:
                go(n.left); vals.append(n.val); go(n.right)
        go(root)
        head = None
        for v in reversed(vals):
            head = ListNode(v, head)
        return head if vals else []
"""


def test_a_plain_returning_row_refuses_a_node(rows):
    """Failed at d48af56 (AC). node_return is None (``-> List[int]``), yet a returned ListNode is serialised
    into the list it holds; the dataset's ``candidate(...) == [1, 3, 2]`` is False for a ListNode."""
    assert score(rows["leetcode_binary-tree-inorder-traversal"], NODE_FOR_LIST)["verdict"] == "WA"


def test_a_tree_node_valued_none_is_not_a_missing_node(prompt):
    """Failed at d48af56 (AC). The level-order serialisation writes a node whose val is None as null, the
    same as no node: a tree with an extra ``TreeNode(None)`` child matches; ``is_same_tree`` rejects it."""
    src = ("class Solution:\n    def invertTree(self, root):\n"
           "        if root is None:\n            return None\n"
           "        root.left, root.right = self.invertTree(root.right), self.invertTree(root.left)\n"
           "        if root.left is None and root.right is not None:\n            root.left = TreeNode(None)\n"
           "        return root\n")
    suite = TestSuite((CallCase("0", "invertTree", ([1, 2],), expected=([1, None, 2],), node_args=("TreeNode",),
                                node_return="TreeNode"),))
    assert judge(Task("python", src, suite, prelude=prompt)).outcome is Outcome.WA


# ------------------------------------------------------------------ lost warning

def test_a_vacuous_node_row_still_warns(rows):
    """Failed at d48af56 (warning ''). f55db87 turns the expected None of a node-returning method into [],
    and vacuous_suite_warning only looks for None: LeetCodeDataset's LCA rows (every pair expects None)
    were flagged before and are silent now, while ``pass`` still scores 1.0."""
    row = rows["leetcode_lowest-common-ancestor-of-a-binary-tree"]
    result = score(row, "class Solution:\n    def lowestCommonAncestor(self, root, p, q):\n        pass\n")
    assert result["verdict"] == "AC"  # the row cannot tell; the warning is what says so
    assert result["warning"].startswith("vacuous test suite")


# ------------------------------------------------------------------ false fail (pre-existing, f304fcc claim)

SPAWN_MERGE = """import multiprocessing as mp
def vals(h):
    out = []
    while h:
        out.append(h.val)
        h = h.next
    return out
class Solution:
    def mergeKLists(self, lists: List[Optional[ListNode]]) -> Optional[ListNode]:
        with mp.get_context('spawn').Pool(2) as p:
            parts = p.map(vals, lists)
        head = None
        for v in sorted((x for part in parts for x in part), reverse=True):
            head = ListNode(v, head)
        return head
"""


@pytest.mark.xfail(strict=True, reason="a spawn child runs /prog/main.py without the row's prelude (List, ListNode "
                   "NameErrors in the worker, the pool waits: TLE); known and kept, as test_redteam6_prog_file's")
def test_a_spawn_pool_works_under_a_rows_prelude(rows):
    """Failed at d48af56 and before it (TLE); known and kept. A spawn (or forkserver) child runs
    /prog/main.py, which holds the program but not the row's prelude: ``List``/``ListNode`` are NameErrors there, the worker dies and the
    pool waits until the time limit. The dataset's own harness runs prompt + completion in one file, so this
    correct program passes there (and here with its own imports: see the next test)."""
    assert score(rows["leetcode_merge-k-sorted-lists"], SPAWN_MERGE)["verdict"] == "AC"


def test_a_spawn_pool_works_when_the_program_imports_what_it_uses(rows):
    code = ("from typing import List, Optional\nclass ListNode:\n    def __init__(self, val=0, next=None):\n"
            "        self.val, self.next = val, next\n" + SPAWN_MERGE)
    assert score(rows["leetcode_merge-k-sorted-lists"], code)["verdict"] == "AC"


# ------------------------------------------------------------------ what held

MISC = """from __future__ import annotations
import sys, pickle, copy, enum, typing, functools, inspect, dataclasses, collections
from dataclasses import dataclass, field
from typing import ClassVar

@dataclass(order=True, frozen=True)
class P:
    x: int
    y: int = 0
    k: ClassVar[int] = 5
    tags: list = field(default_factory=list, compare=False, hash=False)

Color = enum.Enum('Color', 'RED GREEN')
class Shape(enum.IntEnum):
    SQ = 1
Pt = collections.namedtuple('Pt', 'a b')
class TD(typing.NamedTuple):
    a: int
    b: str = 'z'

@functools.singledispatch
def kind(x) -> str: return 'obj'
@kind.register
def _(x: int) -> str: return 'int'
@kind.register
def _(x: P) -> str: return 'P'

def check(n):
    p = P(1, 2)
    import __main__
    return [pickle.loads(pickle.dumps(p)) == p, pickle.loads(pickle.dumps(Color.RED)) is Color.RED,
            pickle.loads(pickle.dumps(Shape.SQ)) is Shape.SQ, pickle.loads(pickle.dumps(Pt(1, 2))) == (1, 2),
            pickle.loads(pickle.dumps(TD(1))) == (1, 'z'), pickle.loads(pickle.dumps(check)) is check,
            copy.deepcopy(p) == p, typing.get_type_hints(P)['x'] is int, len(dataclasses.fields(P)) == 3,
            [kind(1), kind('a'), kind(p)] == ['int', 'obj', 'P'], inspect.getsource(P).startswith('@dataclass'),
            inspect.getmodule(P) is sys.modules[__name__], __main__.P is P, sys.modules[P.__module__].P is P,
            eval('P(3).x') == 3]
"""


def test_module_level_machinery_works_under_the_call_module_name():
    suite = TestSuite((CallCase("a", "check", (1,), expected=([True] * 15,)),))
    v = judge(Task("python", MISC, suite))
    assert v.outcome is Outcome.AC, (v.reason, [(c.name, c.detail) for c in v.cases])


def test_a_fork_pool_of_prelude_classes_works(rows):
    code = SPAWN_MERGE.replace("'spawn'", "'fork'")
    assert score(rows["leetcode_merge-k-sorted-lists"], code)["verdict"] == "AC"


def test_module_state_does_not_reach_the_next_case():
    """A case that changes its module, sys.modules['__mp_main__'] and __main__ leaves nothing for the next."""
    src = ("import sys\nN = 0\n"
           "def f(x):\n    global N\n    N += 1\n    m = sys.modules['__mp_main__']\n"
           "    seen = getattr(m, 'MARK', None)\n    m.MARK = x\n    sys.modules['__main__'] = None\n"
           "    return [N, seen]\n")
    suite = TestSuite(tuple(CallCase(str(i), "f", (i,), expected=([1, None],)) for i in range(3)))
    v = judge(Task("python", src, suite, limits=Limits(cpu_seconds=2)))
    assert v.outcome is Outcome.AC, (v.reason, [(c.name, c.detail) for c in v.cases])
