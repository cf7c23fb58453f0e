"""A run's memory is its own whatever ran before it in the sandbox (issue 28, finding 2).

Page cache (and reclaimable kernel objects: dentries) charged to the sandbox's memory cgroup by
an earlier case or submission stayed in the next run's baseline; when that run allocated, the
kernel reclaimed the cache instead of failing, and the peak over the baseline came out low: a
program touching 590 MB against 512 MiB was MLE alone, AC at ~170 MiB after a case that had
re-read 450 MB of /usr. What the cgroup holds beyond its pinned memory is now reclaimed before a
run is measured (docs/sandbox.md, "Memory"): the honest verdict either way, and a program near
its limit is not made MLE by the cache either.
"""

from __future__ import annotations

import pytest

from arbiter.judge.judge import judge
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.limits import MiB
from session_pairs import DENTRIES, FILL, HOG, NEAR, memory_task, wait_idle




def _outcomes(v):
    return [(c.name, c.outcome, (c.memory_bytes or 0) // MiB) for c in v.cases]


def test_the_hog_alone_is_mle(one_sandbox_pool):
    v = judge(memory_task(HOG))
    assert v.outcome is Outcome.MLE, _outcomes(v)


@pytest.mark.parametrize("filler", [FILL, DENTRIES], ids=["page_cache", "dentries"])
def test_cache_of_an_earlier_case_hides_nothing(filler, one_sandbox_pool):
    v = judge(memory_task(filler, HOG))
    assert [c.outcome for c in v.cases] == [Outcome.AC, Outcome.MLE], _outcomes(v)


def test_cache_of_the_previous_submission_hides_nothing(one_sandbox_pool):
    first = judge(memory_task(FILL))
    assert first.outcome is Outcome.AC, _outcomes(first)
    wait_idle(one_sandbox_pool)
    second = judge(memory_task(HOG))
    assert one_sandbox_pool.stats()["reused"] == 1
    assert second.outcome is Outcome.MLE, _outcomes(second)


def test_cache_of_an_earlier_case_adds_nothing(one_sandbox_pool):
    """470 MB touched after the cache filler: AC, measured as about 470 MB (not the cache's)."""
    v = judge(memory_task(FILL, NEAR))
    assert v.outcome is Outcome.AC, _outcomes(v)
    assert 460 <= v.cases[1].memory_bytes // MiB < 490, _outcomes(v)
