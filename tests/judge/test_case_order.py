"""What the failures-first order keeps: a suite once a submission of it was judged, at most ``max_cases`` cases in
all (red team, serve: every new suite kept three Python lists as long as its cases, up to 4,096 suites a tenant:
a server grew 1.7 MB for each 50,000-case item it scored, and never shrank)."""

from __future__ import annotations

from arbiter.judge.step.order import CaseOrder
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import CaseResult, Outcome, Verdict


def _suite(n: int, tag: str) -> TestSuite:
    return TestSuite(tuple(StdioCase(f"{tag}{i}", b"", (b"",)) for i in range(n)))


def _failed_at(suite: TestSuite, k: int) -> Verdict:
    """A verdict that failed at case ``k`` (the rest skipped), in suite order."""
    cases = [CaseResult(c.name, Outcome.AC if i < k else Outcome.WA if i == k else Outcome.SKIPPED, 0.01)
             for i, c in enumerate(suite.cases)]
    return Verdict(Outcome.WA, 0.0, passed=k, total=len(cases), cases=cases)


def test_the_cases_kept_are_bounded_and_the_least_recent_suites_go_first():
    order = CaseOrder(max_cases=120_000)
    suites = [(f"d{i}", _suite(50_000, f"s{i}")) for i in range(5)]
    for digest, suite in suites:
        assert order.order(digest, suite) == list(range(50_000))  # nothing known yet: the suite's order
        order.learn(digest, suite, _failed_at(suite, 7))
        assert order.cases_kept <= 120_000
    assert len(order) == 2 and order.cases_kept == 100_000
    # the two latest remember their failing case; the first ones were let go
    assert order.order("d4", suites[4][1])[0] == 7 and order.order("d3", suites[3][1])[0] == 7
    assert order.order("d0", suites[0][1])[0] == 0


def test_asking_for_an_order_keeps_nothing():
    order = CaseOrder()
    for i in range(50):
        order.order(f"d{i}", _suite(1000, str(i)))
    assert len(order) == 0 and order.cases_kept == 0


def test_a_suite_larger_than_the_bound_is_judged_in_its_own_order():
    order = CaseOrder(max_cases=1000)
    big = _suite(2000, "b")
    order.learn("big", big, _failed_at(big, 5))
    assert order.order("big", big) == list(range(2000)) and order.cases_kept == 0
