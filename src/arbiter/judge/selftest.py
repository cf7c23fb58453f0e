"""Each registered language's self-test program, judged like any submission (``arbiter doctor``)."""

from __future__ import annotations

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Verdict
from arbiter.languages.registry import LANGUAGES
from arbiter.sandbox.config import SandboxConfig


def run_self_tests(config: SandboxConfig | None = None) -> list[tuple[str, Verdict]]:
    """``(language name, verdict)`` for every language of the registry, in table order; the
    verdict is ``AC`` when the language works on this machine (a ``CE`` or ``SANDBOX_ERROR``
    names what is missing)."""
    out = []
    for name, language in LANGUAGES.items():
        test = language.self_test
        suite = TestSuite((StdioCase("self-test", test.stdin, (test.expected,)),), origin="self-test")
        task = Task(language=name, source=test.source, suite=suite, checker=CheckerSpec("exact"),
                    task_id=f"self-test:{name}")
        out.append((name, judge(task, config=config)))
    return out
