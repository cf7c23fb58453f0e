"""Page plans (docs/sandbox.md, "Page plans"): the pages a session's server and forker write while
they serve, learnt once per sandbox from the judge's own program (read from the host) and copied
ahead of every later submission. No submission changes them, and a session with them judges as
one without. Real sandboxes throughout; the plans are learnt as root only."""

from __future__ import annotations

import os
import time

import pytest

from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.pageplans import learn_pages
from arbiter.sandbox.pool import SandboxPool
from arbiter.sandbox.sandbox import Sandbox

LIMITS = Limits(cpu_seconds=2, wall_seconds=4, memory_bytes=128 * MiB)

#: A submission that writes into every descriptor it holds, then ends its session with children
#: left behind: none of it may reach the zygote's page plans.
MEDDLER = r"""
import os
wrote = []
for fd in range(3, 1024):
    try:
        os.write(fd, b"S" + b"\xff" * 4096)
        wrote.append(fd)
    except OSError:
        pass
for _ in range(4):
    if os.fork() == 0:
        import time
        time.sleep(30)
        os._exit(0)
print(wrote)
"""

#: (source, stdin, status): programs whose verdicts must not depend on the plans.
PROGRAMS = [
    ("print(int(input()) * 2)\n", b"21\n", Status.OK),
    ("import sys\nsys.exit(3)\n", b"", Status.RUNTIME_ERROR),
    ("x = bytearray(200 << 20)\nx[::4096] = b'1' * len(x[::4096])\n", b"", Status.MEMORY_LIMIT),
    ("while True:\n    pass\n", b"", Status.TIME_LIMIT),
    ("x = bytearray(100 << 20)\nx[::4096] = b'1' * len(x[::4096])\nprint(len(x) >> 20)\n", b"", Status.OK),
]


pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="page plans are learnt as root only")


@pytest.fixture
def pool():
    p = SandboxPool(max_sandboxes=2, spares=0)
    yield p
    p.close()


def _wait_idle(pool: SandboxPool) -> None:
    deadline = time.monotonic() + 120
    while pool.stats()["idle"] < 1:
        assert time.monotonic() < deadline, pool.stats()
        time.sleep(0.01)


def _submit(pool: SandboxPool, source: str, stdin: bytes = b"", last: bool = False):
    sb = pool.acquire(limits=LIMITS, python=True)
    try:
        assert sb.load_python(source) is None
        return sb, sb.run_python(stdin, LIMITS, last=last)
    finally:
        pool.release(sb)
        _wait_idle(pool)


def _zygote_plans(sb: Sandbox) -> dict:
    """The pages in each plan the zygote keeps (asked between two sessions)."""
    reply, _ = sb.channel.request({"op": "plans"}, [b""], timeout=10)
    return reply["pages"]


def test_the_pool_learns_the_plans_once_at_a_sandboxs_first_recycle(pool):
    sb, first = _submit(pool, "print(1)\n")
    assert first.status is Status.OK
    assert sb.session.plans_learnt
    learnt = dict(sb.session.plans)
    assert set(learnt) == {"S", "F"} and all(50 <= n <= 2048 for n in learnt.values()), learnt
    again, second = _submit(pool, "print(2)\n", last=True)
    assert again is sb and second.stdout == b"2\n" and sb.session.plans == learnt


def test_no_submission_changes_the_plans():
    """The plans are the judge's alone: a submission that writes into every descriptor it holds,
    leaves children behind and exits oddly changes nothing the zygote keeps."""
    with Sandbox(limits=LIMITS, session=False) as sb:
        learn_pages(sb)
        learnt = dict(sb.session.plans)
        assert learnt and _zygote_plans(sb) == learnt
        for last in (False, True):
            sb.new_session({}, LIMITS, python=True)
            assert sb.load_python(MEDDLER) is None
            meddled = sb.run_python(b"", LIMITS, last=last)
            # (a last case run in the forker holds one pipe, its own "ended" record's: writing
            # into it is its own verdict's business, docs/sandbox.md)
            assert meddled.status in (Status.OK, Status.RUNTIME_ERROR), meddled
            assert sb.end_session()
            assert _zygote_plans(sb) == learnt
        learn_pages(sb)  # (once per sandbox)
        assert sb.session.plans == learnt


def test_a_session_with_plans_judges_as_one_without(pool):
    sb, _ = _submit(pool, "print(1)\n")
    assert sb.session.plans_learnt and sb.session.plans
    with Sandbox(limits=LIMITS) as fresh:  # (never recycled: no plans)
        assert not fresh.session.plans
        for source, stdin, status in PROGRAMS:
            for last in (False, True):
                again, planned = _submit(pool, source, stdin, last=last)
                assert again is sb
                fresh.end_session()
                fresh.new_session({}, LIMITS, python=True)
                assert fresh.load_python(source) is None
                plain = fresh.run_python(stdin, LIMITS, last=last)
                assert planned.status is plain.status is status, (source, last, planned, plain)
                assert planned.stdout == plain.stdout
                if status is Status.OK:  # the plans are in the baseline, never the run's memory
                    assert abs(planned.peak_memory_bytes - plain.peak_memory_bytes) < 4 * MiB, (planned, plain)


def test_a_learning_session_that_finds_no_warm_forker_leaves_the_pool_working(pool, monkeypatch):
    """Red team 49: the learning session once slept 50 ms and took the server's one child as its
    forker; a server slower than that raised in the pool's recycling thread, which died with the
    sandbox neither closed nor reused. With no time to wait at all (the forker may not be forked
    yet), the learning gives no plans or the usual ones, and the pool goes on."""
    from arbiter.sandbox import pageplans

    monkeypatch.setattr(pageplans, "LEARN_SETTLE", 0.0)
    sb, first = _submit(pool, "print(1)\n")
    assert first.status is Status.OK and sb.session.plans_learnt
    for n in (2, 3):
        again, ex = _submit(pool, f"print({n})\n", last=True)
        assert again is sb and ex.status is Status.OK and ex.stdout == b"%d\n" % n
    assert all(t.is_alive() for t in pool._threads["recycle"])
    assert pool.stats()["discarded"] == 0
