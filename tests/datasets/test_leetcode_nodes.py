"""LeetCode list and tree problems: the row (the dataset's signature) says which arguments are
``ListNode`` / ``TreeNode`` and whether the return value is one, never the program's annotations.

Rows are converted by ``arbiter convert --from leetcode`` from LeetCodeDataset-format rows with
the dataset's real preamble, and judged through the verl reward, in the real sandbox.
"""

from __future__ import annotations

import json

import pytest

from arbiter.judge.codec import suite_from_json, suite_to_json
from arbiter.judge.encodings import verl_ground_truth_to_suite
from arbiter.judge.testsuite import InvalidTestSuite
from arbiter.verl.reward import compute_score
from leetcode_rows import converted_rows, dataset_prompt, lc_row

TREE_BODY = """
        if root is None:
            return 0
        return 1 + max(self.maxDepth(root.left), self.maxDepth(root.right))
"""
LIST_BODY = """
        prev = None
        while head:
            head.next, prev, head = prev, head, head.next
        return prev
"""
TREE = {
    "unannotated": "class Solution:\n    def maxDepth(self, root):" + TREE_BODY,
    "qualified": "import typing\nclass Solution:\n    def maxDepth(self, root: typing.Optional['TreeNode']) -> int:"
                 + TREE_BODY,
    "annotated": "class Solution:\n    def maxDepth(self, root: Optional[TreeNode]) -> int:" + TREE_BODY,
    "misannotated": "class Solution:\n    def maxDepth(self, root: List[int]) -> int:" + TREE_BODY,
    "wrong": "class Solution:\n    def maxDepth(self, root):" + TREE_BODY.replace("1 + max", "1 + min"),
}
LIST = {
    "unannotated": "class Solution:\n    def reverseList(self, head):" + LIST_BODY,
    "qualified": "import typing\nclass Solution:\n    def reverseList(self, head: typing.Optional[ListNode])"
                 " -> typing.Optional[ListNode]:" + LIST_BODY,
    "annotated": "class Solution:\n    def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:"
                 + LIST_BODY,
    "misannotated": "class Solution:\n    def reverseList(self, head: List[int]) -> List[int]:" + LIST_BODY,
    "wrong": "class Solution:\n    def reverseList(self, head):" + LIST_BODY.replace("return prev", "return head"),
}
#: The row decides: annotations that are missing, qualified or say something else change nothing.
EXPECTED = {"unannotated": "AC", "qualified": "AC", "annotated": "AC", "misannotated": "AC", "wrong": "WA"}


@pytest.fixture(scope="module")
def rows(shared, tmp_path_factory) -> dict[str, object]:
    """The tree and list rows (and one of plain values) as ``arbiter convert --from leetcode`` writes them."""
    prompt = dataset_prompt(shared)
    raw = [
        lc_row("maximum-depth-of-binary-tree", "maxDepth(self, root: Optional[TreeNode]) -> int", "maxDepth",
               [("root = [3,9,20,None,None,15,7]", "3"), ("root = [1,None,2]", "2"), ("root = []", "0")], prompt),
        lc_row("reverse-linked-list", "reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]",
               "reverseList", [("head = [1,2,3,4,5]", "[5, 4, 3, 2, 1]"), ("head = [1,2]", "[2, 1]"),
                               ("head = []", "None")], prompt),
        lc_row("evens", "evens(self, nums: List[int]) -> List[int]", "evens",
               [("nums = [1,2,4]", "[2, 4]"), ("nums = [1,3]", "[]")], prompt),
    ]
    return converted_rows(raw, tmp_path_factory.mktemp("lc_nodes"), "rows.parquet")


def verdicts(row, programs: dict[str, str]) -> dict[str, str]:
    return {name: compute_score(row.data_source, f"```python\n{code}```", row.ground_truth, row.extra_info)["verdict"]
            for name, code in programs.items()}


def test_tree_argument_is_built_whatever_the_annotations(rows):
    assert verdicts(rows["leetcode_maximum-depth-of-binary-tree"], TREE) == EXPECTED


def test_list_argument_and_return_follow_the_row(rows):
    assert verdicts(rows["leetcode_reverse-linked-list"], LIST) == EXPECTED


def test_ground_truth_carries_the_node_types(rows):
    tree = json.loads(rows["leetcode_maximum-depth-of-binary-tree"].ground_truth)
    assert {(tuple(c["node_args"]), c["node_return"]) for c in tree} == {(("TreeNode",), None)}
    lst = json.loads(rows["leetcode_reverse-linked-list"].ground_truth)
    assert {(tuple(c["node_args"]), c["node_return"]) for c in lst} == {(("ListNode",), "ListNode")}
    assert [c["output"] for c in lst] == [[[5, 4, 3, 2, 1]], [[2, 1]], [[]]]  # the empty list is []
    suite = verl_ground_truth_to_suite(rows["leetcode_reverse-linked-list"].ground_truth, row="r")
    assert all(c.node_args == ("ListNode",) and c.node_return == "ListNode" for c in suite.cases)


def test_a_plain_row_says_so_and_an_annotation_does_not_make_none_an_empty_list(rows):
    """A row of plain values carried no node types, so the harness read the program's own annotation:
    ``-> Optional[ListNode]`` and ``return None`` passed for an expected ``[]`` (red team, checkers: AC
    on the real row remove-methods-from-project). Every converted row says what it returns now."""
    row = rows["leetcode_evens"]
    assert {(tuple(c["node_args"]), c["node_return"]) for c in json.loads(row.ground_truth)} == {((None,), None)}
    body = "        out = [x for x in nums if x % 2 == 0]\n        return out if out else None\n"
    programs = {"right": "class Solution:\n    def evens(self, nums):\n        return [x for x in nums if x % 2 == 0]\n",
                "none for []": "class Solution:\n    def evens(self, nums) -> Optional[ListNode]:\n" + body}
    assert verdicts(row, programs) == {"right": "AC", "none for []": "WA"}


def test_a_row_without_node_types_reads_the_annotations_as_before(rows):
    row = rows["leetcode_maximum-depth-of-binary-tree"]
    old = [{k: v for k, v in c.items() if k not in ("node_args", "node_return")} for c in json.loads(row.ground_truth)]
    assert all(c.node_args is None for c in verl_ground_truth_to_suite(old, row="old").cases)
    scores = {name: compute_score(row.data_source, f"```python\n{TREE[name]}```", json.dumps(old),
                                  row.extra_info)["verdict"] for name in ("annotated", "unannotated")}
    assert scores == {"annotated": "AC", "unannotated": "RE"}


@pytest.mark.parametrize("extra", [{"node_args": ["Node"]}, {"node_args": ["ListNode", None]}, {"node_args": "ListNode"},
                                   {"node_return": "ListNode"}, {"node_args": [None], "node_return": "Dict[ListNode]"}])
def test_malformed_node_types_are_refused(extra):
    case = {"type": "function_call", "fn_name": "f", "input": [[1, 2]], "output": [[2, 1]], **extra}
    with pytest.raises(InvalidTestSuite, match="node_"):
        verl_ground_truth_to_suite([case], row="r")


def test_task_json_keeps_the_node_types(rows):
    suite = verl_ground_truth_to_suite(rows["leetcode_reverse-linked-list"].ground_truth, row="r")
    back = suite_from_json(json.loads(json.dumps(suite_to_json(suite))))
    assert back.cases == suite.cases and back.cases[0].node_args == ("ListNode",)
    plain = verl_ground_truth_to_suite([{"type": "function_call", "fn_name": "f", "input": [1], "output": [2]}], row="p")
    assert "node_args" not in suite_to_json(plain)["cases"][0]
