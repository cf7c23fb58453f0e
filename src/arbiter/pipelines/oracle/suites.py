"""The test suites an answer is judged on (visible, hidden, generated) and judging one of them. See
``docs/oracle.md``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arbiter.datasets.oracle import SeedRow
from arbiter.pipelines.oracle.generated_tests import seed_compile_spec, seed_run_limits
from arbiter.pipelines.oracle.options import InfraError

if TYPE_CHECKING:
    from arbiter.pipelines.oracle.context import TaskInfo, VerifyContext

#: Suite names in judging order (and the tie-break order of the largest-input choice).
SUITES = ("visible", "hidden", "generated")


def checker_of(seed: SeedRow):
    """The seed's ``public_checker`` as a checker spec (``exact_stdout`` with or without trailing whitespace)."""
    from arbiter.checkers.spec import CheckerSpec

    return CheckerSpec("trailing_whitespace" if seed.public_checker.strip_trailing_whitespace else "exact")


@dataclass
class Case:
    name: str
    stdin: bytes
    stdout: bytes
    suite: str


def suites_of(seed: SeedRow, ctx: VerifyContext, info: TaskInfo) -> list[tuple[str, list[Case] | None]]:
    """``[(suite name, cases or None when the suite does not exist)]`` in judging order."""
    from arbiter.judge.encodings._common import str_to_bytes

    visible = [Case(t.name, str_to_bytes(t.stdin), str_to_bytes(t.stdout), "visible") for t in seed.visible_tests]
    hidden = None
    if ctx.hidden is not None and seed.task_id in ctx.hidden.tests:
        # only the cases the seed's source passes (or could not finish): the others are bad data, dropped
        keep = set(info.hidden.kept) if info.hidden is not None else None
        hidden = [Case(t.name, str_to_bytes(t.stdin), str_to_bytes(t.stdout), "hidden")
                  for t in ctx.hidden.for_task(seed.task_id) if keep is None or t.name in keep]
        hidden = hidden or None
    generated = None
    if info.generated is not None and info.generated.cases:
        generated = [Case(c.name, c.stdin, c.stdout, "generated") for c in info.generated.cases]
    return [("visible", visible), ("hidden", hidden), ("generated", generated)]


def judge_suite(name: str, cases: list[Case], code: str, seed: SeedRow, ctx: VerifyContext, key: str,
                run_all: bool) -> Any:
    """The answer's verdict on one suite (all-or-nothing); our sandbox failure raises :class:`InfraError`."""
    from arbiter.judge.judge import judge
    from arbiter.judge.task import Task
    from arbiter.judge.testsuite import StdioCase, TestSuite
    from arbiter.judge.verdict import Outcome

    suite = TestSuite(tuple(StdioCase(c.name, c.stdin, (c.stdout,)) for c in cases), origin=f"oracle:{name}")
    task = Task(language="cpp", source=code, suite=suite, limits=seed_run_limits(seed), checker=checker_of(seed),
                scoring="all_or_nothing", run_all=run_all, compile=seed_compile_spec(seed), task_id=key)
    with ctx.work():
        v = judge(task, config=ctx.options.config)
    if v.outcome is Outcome.SANDBOX_ERROR:
        raise InfraError(f"{name} tests: sandbox error: {v.reason}")
    return v


def largest_by_input(cases: list[Case], k: int) -> list[Case]:
    """The ``k`` cases with the largest inputs (ties: suite order, then position)."""
    ranked = sorted(range(len(cases)), key=lambda i: (-len(cases[i].stdin), SUITES.index(cases[i].suite), i))
    return [cases[i] for i in ranked[:k]]
