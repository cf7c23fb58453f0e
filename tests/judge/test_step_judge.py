"""The step judge (arbiter.judge.step) on the real sandbox: reused verdicts are the run's own
(marked cached), copies in flight wait for their original, our failures are never reused, a
wrong program of a suite fails first on the case that failed the suite's earlier submissions
while run_all / fraction keep the suite's order, the longest predicted task starts first, and a
verdict folder survives the process. The hostile side: a program cannot see or write the verdict
folder, and a one-byte change is another program."""

from __future__ import annotations

import asyncio

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import pytest

from arbiter.judge.judge import judge
from arbiter.judge.step import OFF, ON, Settings, StepJudge
from arbiter.judge.step.store import DiskStore, VerdictStore
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.limits import Limits

SUITE = TestSuite([StdioCase(str(i), f"{i}\n", f"{2 * i}\n") for i in range(12)])
DOUBLE = "print(2 * int(input()))"


def wrong_at(k: int, extra: str = "") -> str:
    return f"n = int(input())\nprint(2 * n if n != {k} else -1){extra}"


def task(source: str, suite: TestSuite = SUITE, **kw) -> Task:
    return Task("python", source, suite, limits=Limits(cpu_seconds=2), **kw)


def same(a, b) -> bool:
    """Equal verdicts but for ``cached`` (a reused one is the run's own, timings included)."""
    return dataclasses.replace(a, cached=False) == dataclasses.replace(b, cached=False)


def decided(v) -> tuple:
    """What a verdict decided, without its timings (two runs never share those)."""
    return (v.outcome, v.score, v.passed, v.total, v.reason,
            [(c.name, c.outcome, c.exit_code, c.signal, c.diff, c.detail) for c in v.cases])


@pytest.fixture
def judges():
    j = StepJudge(2)
    yield j
    j.close()


def test_a_repeat_is_the_runs_own_verdict_marked_cached(judges):
    first = judges.judge(task(wrong_at(5)))
    again = judges.judge(task(wrong_at(5), task_id="another row label"))
    assert not first.cached and again.cached and same(first, again)
    assert first.outcome is Outcome.WA and judges.stats()["runs"] == 1 and judges.stats()["hits"] == 1
    assert [c.name for c in again.cases] == [c.name for c in SUITE.cases]  # the suite's order


def test_copies_in_flight_wait_for_their_original(judges):
    futures = [judges.submit(task(DOUBLE)) for _ in range(6)]
    verdicts = [f.result() for f in futures]
    assert [v.cached for v in verdicts] == [False] + [True] * 5
    assert all(same(v, verdicts[0]) and v.outcome is Outcome.AC for v in verdicts)
    st = judges.stats()
    assert (st["runs"], st["joined"] + st["hits"]) == (1, 5)


def test_a_one_byte_change_is_another_program(judges):
    a = judges.judge(task(DOUBLE))
    b = judges.judge(task(DOUBLE + " "))
    c = judges.judge(task(DOUBLE, SUITE + TestSuite([StdioCase("x", "1\n", "3\n")])))
    assert not b.cached and not c.cached and a.outcome is Outcome.AC and c.outcome is Outcome.WA


def test_our_failures_are_never_reused(tmp_path):
    broken = SandboxConfig(python=str(tmp_path / "no-python"))
    j = StepJudge(2, config=broken)
    try:
        futures = [j.submit(task(DOUBLE)) for _ in range(3)]
        verdicts = [f.result() for f in futures]
        assert all(v.outcome is Outcome.SANDBOX_ERROR and not v.cached for v in verdicts)
        assert j.stats()["runs"] == 3 and len(j.store) == 0  # each copy judged on its own, nothing kept
    finally:
        j.close()


def test_failures_first_after_the_suite_taught_it(judges):
    first = judges.judge(task(wrong_at(9)))  # nothing learned yet: the suite's order
    assert (first.passed, first.outcome) == (9, Outcome.WA)
    other = judges.judge(task(wrong_at(9, "\n# another response")))
    ran = [c.name for c in other.cases if c.outcome is not Outcome.SKIPPED]
    assert ran == ["9"] and other.passed == 0 and other.outcome is Outcome.WA and other.score == 0.0
    assert [c.name for c in other.cases] == [c.name for c in SUITE.cases]
    ok = judges.judge(task(DOUBLE))  # a right program still runs every case
    assert ok.outcome is Outcome.AC and ok.passed == 12 and ok.score == 1.0
    # off: the suite's order, as judge() alone gives
    plain = judges.judge(task(wrong_at(9, "\n# a third")), settings=OFF)
    assert plain.passed == 9 and decided(plain) == decided(judge(task(wrong_at(9, "\n# a third"))))


@pytest.mark.parametrize("kw", [{"run_all": True}, {"scoring": "fraction"}])
def test_run_all_and_fraction_keep_the_suites_order(judges, kw):
    judges.judge(task(wrong_at(7)))  # teaches: case 7 fails
    v = judges.judge(task(wrong_at(3), **kw))
    assert v.passed == 11 and [c.outcome for c in v.cases].count(Outcome.WA) == 1
    assert decided(v) == decided(judge(task(wrong_at(3), **kw)))  # judge()'s verdict: order, counts, reason


class _Recording:
    """A thread pool that records the order in which it is handed tasks."""

    def __init__(self):
        self.pool = ThreadPoolExecutor(1)
        self.started: list[int] = []
        self.gate = threading.Event()

    def submit(self, fn, arg):
        self.started.append(len(arg.suite.cases))
        return self.pool.submit(lambda: (self.gate.wait(30), fn(arg))[1])


def test_the_longest_predicted_task_starts_first():
    rec = _Recording()
    j = StepJudge(1, executor=rec)
    sizes = [2, 40, 5, 80, 1, 20]
    suites = [TestSuite([StdioCase(str(i), f"{i}\n", f"{2 * i}\n") for i in range(n)]) for n in sizes]
    futures = [j.submit(task(DOUBLE, s)) for s in suites]  # the first starts at once (a free slot)
    rec.gate.set()
    assert all(f.result().outcome is Outcome.AC for f in futures)
    assert rec.started == [2, 80, 40, 20, 5, 1]
    fifo = _Recording()
    j = StepJudge(1, executor=fifo)
    fifo.gate.set()
    [f.result() for f in [j.submit(task(DOUBLE + " #", s), settings=Settings(schedule="fifo")) for s in suites]]
    assert fifo.started == sizes
    rec.pool.shutdown()
    fifo.pool.shutdown()


def test_a_suite_judged_since_moves_its_queued_submissions():
    """A batch is queued at once: what the run learns of a suite while it runs (here: its first
    submission was slow) reorders the suite's submissions still waiting."""
    rec = _Recording()
    j = StepJudge(1, executor=rec)
    small = TestSuite([StdioCase(str(i), f"{i}\n", f"{2 * i}\n") for i in range(2)])
    larger = TestSuite([StdioCase(str(i), f"{i}\n", f"{2 * i}\n") for i in range(8)])
    slow = "n = int(input())\ns = 0\nfor i in range(4_000_000):\n    s += i\nprint(2 * n)"
    first = j.submit(task(slow, small))  # starts at once, held at the gate: the rest queue
    queued = [j.submit(task(DOUBLE + " # larger", larger)), j.submit(task(DOUBLE + " # a", small)),
              j.submit(task(DOUBLE + " # b", small))]
    assert j.stats()["queued"] == 3
    rec.gate.set()
    assert all(f.result().outcome is Outcome.AC for f in [first, *queued])
    assert first.result().seconds > 2 * j.costs.predict(None, task(DOUBLE, larger))  # what moved them
    assert rec.started == [2, 2, 2, 8]
    assert j.stats()["queued"] == 0
    rec.pool.shutdown()


def test_a_verdict_folder_outlives_the_process(tmp_path):
    first = StepJudge(1, store=VerdictStore(disk=DiskStore(tmp_path)))
    v = first.judge(task(wrong_at(4)))
    first.close()
    later = StepJudge(1, store=VerdictStore(disk=DiskStore(tmp_path)))  # a new process's view of the folder
    again = later.judge(task(wrong_at(4)))
    assert again.cached and same(v, again) and later.stats()["runs"] == 0
    later.close()


READS_FOLDER = """
import os, sys
path = sys.stdin.readline().strip()
try:
    print(sorted(os.listdir(path))[:3])
    open(os.path.join(path, "planted"), "w").write("x")
    print("wrote")
except OSError as exc:
    print(type(exc).__name__)
"""


def test_a_program_cannot_see_or_plant_verdicts(tmp_path):
    folder = tmp_path / "verdicts"
    j = StepJudge(1, store=VerdictStore(disk=DiskStore(folder)))
    j.judge(task(DOUBLE))  # the folder now holds one verdict
    assert any(folder.rglob("*"))
    probe = Task("python", READS_FOLDER, TestSuite([StdioCase("1", f"{folder}\n", "FileNotFoundError\n")]))
    v = j.judge(probe, settings=ON)
    assert v.outcome is Outcome.AC, v.reason  # the folder does not exist inside the sandbox
    assert not (folder / "planted").exists()
    j.close()


ODD_OUTPUT = r"""
import sys
sys.stdout.buffer.write(b"\xff\xfe\xed\x00 \xed\xa0\x80 \xf0\x9f\x98\x80 " + b"9" * 5000 + b"\n")
"""


def test_a_reused_verdict_of_odd_output_is_the_runs_own(judges):
    """Bytes that are not UTF-8, NUL, a lone surrogate's encoding, an emoji and a 5000-digit
    number in the diff: the stored verdict reads back equal, field for field."""
    t = Task("python", ODD_OUTPUT, TestSuite([StdioCase("1", "", "1\n"), StdioCase("2", "", "2\n")]))
    first = judges.judge(t)
    again = judges.judge(t)
    assert first.outcome is Outcome.WA and again.cached and same(first, again)


def test_a_program_that_changes_with_each_run_gets_its_first_runs_verdict(judges):
    """A program whose answer depends on chance is judged once: its copies get that verdict (the
    documented rule), never another program's."""
    coin = "import os\nprint(2 * int(input()) if os.urandom(1)[0] & 1 else -1)"
    first = judges.judge(task(coin))
    assert all(judges.judge(task(coin)).outcome is first.outcome for _ in range(3))
    assert judges.stats()["runs"] == 1


def test_its_judges_run_within_the_process_judge_slots():
    """The process's step judge holds the process's judge slots (one bound per process: a judge
    that holds every slot elsewhere keeps it from starting), and judges once one is free."""
    from arbiter.judge.step import default_step_judge
    from arbiter.sandbox.slots import JudgeSlots, judge_slots

    assert default_step_judge().slots is judge_slots()
    slots = JudgeSlots(1)
    j = StepJudge(2, slots=slots)
    try:
        with slots:  # another door's judge holds the only slot
            fut = j.submit(task(DOUBLE, TestSuite([StdioCase("a", "3\n", "6\n")])))
            wait([fut], timeout=1.0)  # (it cannot end while the slot is held, however long this is)
            assert not fut.done() and slots.busy == 1
        assert fut.result(timeout=120).outcome is Outcome.AC and slots.busy == 0
        assert j.judge_here(task(DOUBLE, TestSuite([StdioCase("b", "4\n", "8\n")]))).outcome is Outcome.AC
    finally:
        j.close()


def test_judge_runs_a_task_that_would_start_at_once_in_the_callers_thread(monkeypatch):
    """judge() with a worker free and nothing queued runs the task in the calling thread (not the
    main one: see the next test), in that worker's place (its slot held, counted as running); with
    every worker busy it queues as submit() does; a copy of a task being judged there waits for it;
    an error is the caller's, an interrupt leaves nothing claimed (its copies judge themselves).
    No sandbox: a stub judge."""
    from arbiter.judge.step import stepjudge
    from arbiter.judge.verdict import Verdict
    from arbiter.sandbox.slots import JudgeSlots

    slots = JudgeSlots(2)
    j = StepJudge(1, slots=slots)
    seen = []
    gate, entered = threading.Event(), threading.Event()

    def stub(t, **_):
        seen.append((threading.current_thread(), slots.busy, j.stats()["running"], t.source))
        if "hold" in t.source:
            entered.set()
            gate.wait(30)
        if "boom" in t.source:
            raise ValueError("boom")
        if "interrupt" in t.source:
            raise KeyboardInterrupt
        return Verdict(Outcome.AC, 1.0, passed=1, total=1)

    monkeypatch.setattr(stepjudge, "judge", stub)
    one = TestSuite([StdioCase("a", "1\n", "2\n")])

    def caller():  # (not the main thread: judge() from it hands the task to a worker, see below)
        assert j.judge(task("a", one)).outcome is Outcome.AC
        assert seen[-1][:3] == (threading.current_thread(), 1, 1)
        st = j.stats()
        assert (st["runs"], st["done"], st["running"], st["max_running"], slots.busy) == (1, 1, 0, 1, 0)
        assert j.judge(task("a", one)).cached  # reused as before

        held = ThreadPoolExecutor(2)
        first = held.submit(j.judge, task("hold", one))  # runs in that caller's thread
        assert entered.wait(30)
        copy = held.submit(j.judge, task("hold", one))  # an identical task: waits for it
        other = j.submit(task("b", one))  # the one worker is busy: queued
        assert j.stats()["queued"] == 1
        gate.set()
        assert first.result(30).outcome is Outcome.AC and copy.result(30).cached
        assert other.result(30).outcome is Outcome.AC
        threads = {s[3]: s[0] for s in seen}
        assert threads["b"].name.startswith("arbiter-step") and threads["hold"].name.startswith("ThreadPool")
        assert j.stats()["runs"] == 3 and j.stats()["running"] == 0
        held.shutdown()

        with pytest.raises(ValueError, match="boom"):
            j.judge(task("boom", one))
        with pytest.raises(ValueError, match="boom"):  # never stored, never left claimed
            j.judge(task("boom", one))
        with pytest.raises(KeyboardInterrupt):
            j.judge(task("interrupt", one))
        assert j.store.claim(j.key(task("interrupt", one))) is None  # nothing left claimed
        assert j.stats()["running"] == 0 and slots.busy == 0

    try:
        ThreadPoolExecutor(1, thread_name_prefix="caller").submit(caller).result(timeout=120)
    finally:
        j.close()


class _Signalled(BaseException):
    """What the test's signal handler raises (a KeyboardInterrupt would stop pytest itself)."""


def test_a_signal_in_the_main_thread_never_lands_in_the_judges_bookkeeping(monkeypatch):
    """Python runs signal handlers in the main thread, between any two bytecodes: an interrupt
    (Ctrl-C in a notebook, a SIGALRM timeout around compute_score) raised while the main thread
    settles a verdict it judged itself would leave its key claimed (every later copy of that
    program waits forever) or its worker's place counted. So judge() from the main thread hands
    the task to a worker and the interrupt lands in its wait, as before; the verdict is still
    stored and its copies get it. Here the signal is sent while the verdict is being stored
    (real signal, stub judge: no sandbox)."""
    import signal
    import sys
    import time

    from arbiter.judge.step import stepjudge
    from arbiter.judge.verdict import Verdict

    j = StepJudge(1)
    ran_in = []

    def stub(t, **_):
        ran_in.append(threading.current_thread())
        if threading.current_thread() is not threading.main_thread():
            waiting()  # (a worker's: ends once the main thread waits for it)
        return Verdict(Outcome.AC, 1.0, passed=1, total=1)

    handled = threading.Event()

    def put(key, verdict, _put=j.store.put):
        if not handled.is_set():  # the first verdict stored
            signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)  # handled there, at its next bytecode
            handled.wait(10)  # (on a worker: until the main thread took it)
        return _put(key, verdict)

    def handler(*_):
        handled.set()
        raise _Signalled

    def waiting():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            frame = sys._current_frames().get(threading.main_thread().ident)
            while frame is not None and frame.f_code.co_name not in ("result", "wait"):
                frame = frame.f_back
            if frame is not None:
                return
            time.sleep(0.001)

    monkeypatch.setattr(stepjudge, "judge", stub)
    monkeypatch.setattr(j.store, "put", put)
    previous = signal.signal(signal.SIGUSR1, handler)
    one = TestSuite([StdioCase("a", "1\n", "2\n")])
    try:
        try:
            j.judge(task("signalled", one))
        except _Signalled:
            pass
        copy = ThreadPoolExecutor(1)
        again = copy.submit(j.judge, task("signalled", one))  # the same program, from another thread
        assert again.result(timeout=10).outcome is Outcome.AC  # (never left waiting for a claim)
        copy.shutdown()
        deadline = time.monotonic() + 30
        while j.stats()["running"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert j.stats()["running"] == 0 and not j.store._running
        assert ran_in[0] is not threading.main_thread()  # judged on a worker
    finally:
        signal.signal(signal.SIGUSR1, previous)
        j.close()


_POINTS: dict = {}


def _signal_points(code) -> set[int]:
    """Where CPython 3.11 runs a pending signal's handler in ``code``: after a call returns (the
    next instruction) and at a loop's jump back (its target); and at a function's start."""
    import dis

    points = _POINTS.get(code)
    if points is None:
        ins = list(dis.get_instructions(code))
        points = {b.offset for a, b in zip(ins, ins[1:]) if a.opname in ("CALL", "CALL_FUNCTION_EX")}
        points |= {a.argval for a in ins if a.opname.startswith("JUMP_BACKWARD")}
        _POINTS[code] = points
    return points


def _interrupted_at(n: int, call) -> tuple[bool, BaseException | None]:
    """``call()`` in this (the main) thread with an interrupt raised at the ``n``-th place a signal
    handler could run (:func:`_signal_points`, in every frame it runs: arbiter's, the standard
    library's): whether it was raised, and what the call raised instead of returning, if anything."""
    import sys

    seen = [0]

    def count() -> None:
        seen[0] += 1
        if seen[0] == n:
            raise _Signalled

    def local(frame, event, arg):
        if event == "opcode" and frame.f_lasti in _signal_points(frame.f_code):
            count()
        return local

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        count()  # (its start)
        return local

    sys.settrace(tracer)
    try:
        call()
    except BaseException as exc:  # (the interrupt, or what the standard library made of it)
        return seen[0] >= n, exc
    finally:
        sys.settrace(None)
    return seen[0] >= n, None


@pytest.mark.parametrize("door", ["judge", "submit", "submit_many", "wait", "bridge"])
def test_an_interrupt_anywhere_in_the_main_threads_part_leaves_the_judge_whole(door):
    """Python runs signal handlers in the main thread, after any call returns, at any loop's jump
    back and at any function's start: an interrupt (Ctrl-C in a notebook, a SIGALRM timeout around
    compute_score) can land at any of these in the code the main thread runs, the standard
    library's included (a future's ``Condition.__enter__`` interrupted with its lock taken left
    the worker completing it waiting forever). Here one is raised at each in turn, until a call
    gets through: after each, the same program from another thread gets its verdict (its key
    never left claimed, no lock left held: those calls waited forever before), and so does the
    next call from the main thread; once the judge is idle no place is counted, nothing is claimed
    or queued, and one intake thread serves it. (What the caller then does with a future from
    submit() is its own: not under test.) Real sandbox."""
    import time

    j = StepJudge(2)
    one = TestSuite([StdioCase("a", "1\n", "2\n")])
    calls = {"judge": j.judge, "submit": j.submit, "submit_many": lambda t: j.submit_many([t]),
             # a batch door's wait for its futures (iter_scores) and the reward-loop manager's (LocalJudges):
             # they asked the future itself from the main thread, and an interrupt wedged the judge (red team)
             # (the bridge's own part: asyncio's loop is not under test, an interrupt inside it is asyncio's)
             "wait": lambda t: j.intake.wait(j.submit(t)), "bridge": lambda t: j.intake.bridge(j.submit_many([t]), loop)}
    loop = asyncio.new_event_loop()
    copies = ThreadPoolExecutor(1)
    try:
        interrupted = 0
        for n in range(1, 3000):
            t = task(f"# {door} {n}\n" + DOUBLE, one)
            raised, error = _interrupted_at(n, lambda: calls[door](t))
            if not raised:
                assert error is None, error
                break
            interrupted += 1
            assert copies.submit(j.judge, t).result(timeout=120).outcome is Outcome.AC
            assert j.judge(task(f"# {door} {n} again\n" + DOUBLE, one)).outcome is Outcome.AC
        assert interrupted >= 10
        deadline = time.monotonic() + 60

        def intake_threads() -> int:
            return [th.name for th in threading.enumerate()].count(j.intake._name)

        while (j.stats()["running"] or j.store._running or intake_threads() > 2) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert j.stats()["running"] == 0 and not j.store._running and j.stats()["queued"] == 0
        assert intake_threads() <= 2  # (the one that takes calls and its spare)
        if door == "bridge":  # the mirrors of the calls that got through carry their verdicts
            mirrors = j.intake.bridge(j.submit_many([task("# bridged\n" + DOUBLE, one)]), loop)
            assert loop.run_until_complete(asyncio.gather(*mirrors))[0].outcome is Outcome.AC
    finally:
        copies.shutdown(wait=False)
        j.close()
        loop.close()


def test_an_abandoned_slow_call_holds_up_no_later_one():
    """A main-thread call interrupted while its program runs (a timeout around compute_score) is
    still judged, in its intake thread: the next call from the main thread (in another intake
    thread), and a batch, start at once in the other worker's place, not after it."""
    import signal

    j = StepJudge(2)
    one = TestSuite([StdioCase("a", "1\n", "2\n")])
    slow = Task("python", "import time\nwhile True:\n    time.sleep(0.01)", one,
                limits=Limits(cpu_seconds=1, wall_seconds=8))

    def alarm(*_):
        raise _Signalled

    previous = signal.signal(signal.SIGALRM, alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(_Signalled):
            j.judge(slow)
        assert j.stats()["running"] == 1  # (still judged)
        quick = j.judge(task(DOUBLE + " # quick", one))
        batch = j.submit_many([task(DOUBLE + " # batch", one)])
        assert quick.outcome is Outcome.AC and batch[0].result(timeout=120).outcome is Outcome.AC
        assert j.stats()["running"] == 1  # (the slow one was still running all along)
        assert j.submit(slow).result(timeout=120).outcome is Outcome.TLE  # its verdict, stored
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        j.close()


def test_an_interrupt_in_a_call_made_behind_an_abandoned_one_leaves_the_intake_whole():
    """While an abandoned call still runs in an intake thread, the next call from the main thread
    is interrupted at each place a handler can run, in turn: every call after it is taken at once
    (red team 50: a thread the main thread started for it, interrupted inside ``Thread.start``, was
    counted but never ran, and every later call waited forever). A function that gives no future to
    wait for is its caller's error, not a dead intake thread."""
    from arbiter.judge.step.intake import Intake

    intake = Intake(name="test-intake-behind")
    held = threading.Event()
    try:
        with pytest.raises(_Signalled):  # abandoned: its function still waits for `held`
            _within(0.05, lambda: intake.run(lambda: held.wait(60)), _Signalled)
        for n in range(1, 200):
            raised, _ = _interrupted_at(n, lambda: intake.run(lambda: "behind"))
            if not raised:
                break
            assert _within(5, lambda: intake.run(lambda: "next")) == "next", n  # (a hang guard)
        assert n > 3
        with pytest.raises(AttributeError):
            intake.run(lambda: "no future", until_done=True)
        assert intake.run(lambda: "still served") == "still served"
    finally:
        held.set()
        intake.close()


def test_a_judge_made_before_a_fork_judges_from_the_childs_main_thread():
    """A forked child has none of its parent's threads: a step judge made before the fork (used
    or not) gets a new intake in the child, and a main-thread call there is judged (red team 50:
    it waited forever for a thread that was not there). A child stuck past 60 s is killed."""
    import os
    import signal

    one = TestSuite([StdioCase("a", "1\n", "2\n")])
    fresh, used = StepJudge(1), StepJudge(1)
    assert used.judge(task(DOUBLE + " # parent", one)).outcome is Outcome.AC
    pid = os.fork()
    if pid == 0:  # ------------------------------------------------------------------ the child
        code = 1
        try:
            signal.alarm(60)
            verdicts = [j.judge(task(DOUBLE + f" # child {i}", one)).outcome for i, j in enumerate((fresh, used))]
            code = 0 if verdicts == [Outcome.AC, Outcome.AC] else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    fresh.close()
    used.close()
    assert os.waitstatus_to_exitcode(status) == 0, status


def _within(seconds: float, call, interrupt: type[BaseException] = AssertionError):
    """``call()`` in the main thread, interrupted (by default: the test failed) after ``seconds``."""
    import signal

    def hung(*_):
        raise interrupt(f"no answer in {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return call()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_job_cancelled_by_its_executors_shutdown_ends():
    """An executor shut down with cancel_futures cancels the work it has not begun: the job ends
    (CancelledError), its key is not left claimed and its place is given back (it waited forever)."""
    from concurrent.futures import CancelledError

    ex = ThreadPoolExecutor(1)
    gate = threading.Event()
    ex.submit(gate.wait, 60)  # its only thread is busy: the judge's job waits in its queue
    j = StepJudge(1, executor=ex)
    one = TestSuite([StdioCase("a", "1\n", "2\n")])
    t = task(DOUBLE + " # cancelled", one)
    fut = j.submit(t)
    ex.shutdown(wait=False, cancel_futures=True)
    gate.set()
    with pytest.raises(CancelledError):
        fut.result(timeout=60)
    assert j.stats()["running"] == 0 and not j.store._running


def test_a_dropped_judge_leaves_no_intake_thread():
    """A judge used from the main thread and dropped without close() takes its intake thread
    with it."""
    import gc
    import time

    dropped = set()

    def alive():
        return [th.name for th in threading.enumerate() if th.name in dropped]

    for i in range(5):
        j = StepJudge(1)
        assert j.judge(task(DOUBLE + f" # dropped {i}", TestSuite([StdioCase("a", "1\n", "2\n")]))).passed == 1
        assert j.intake._server is not None  # (judged from the main thread: its intake served it)
        dropped.add(j.intake._name)
        del j
    gc.collect()
    deadline = time.monotonic() + 30
    while alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert alive() == []


def test_a_closed_judge_refuses_tasks_from_every_thread():
    """After close(), judge(), submit() and call() raise, from the main thread and from any other
    (a call from another thread is not judged in that thread behind the closed judge's back)."""
    j = StepJudge(1)
    one = TestSuite([StdioCase("a", "1\n", "2\n")])
    assert j.judge(task(DOUBLE, one)).outcome is Outcome.AC
    j.close()
    for call in (lambda: j.judge(task(DOUBLE + " #", one)), lambda: j.submit(task(DOUBLE + " #", one)),
                 lambda: j.submit_many([task(DOUBLE + " #", one)]), lambda: j.call(len, "x")):
        with pytest.raises(RuntimeError, match="closed"):
            call()
        with pytest.raises(RuntimeError, match="closed"):
            ThreadPoolExecutor(1).submit(call).result(timeout=60)


def test_an_unusable_hint_is_no_hint_and_leaves_no_key_claimed():
    """``hint="0.5"`` (text) raised TypeError after the task's key was claimed: every later identical submission
    waited forever (red team). An unusable hint is now no hint."""
    j = StepJudge(1)
    one = TestSuite([StdioCase("a", "1\n", "2\n")])
    try:
        for hint in ("0.5", float("nan"), -1.0, True, [1]):
            t = task(f"# hint {hint!r}\n" + DOUBLE, one)
            assert j.judge(t, hint=hint).outcome is Outcome.AC
            assert j.submit(t, hint=hint).result(timeout=120).cached  # (stored, nothing left claimed)
        assert not j.store._running
    finally:
        j.close()


def test_copies_of_a_cancelled_original_are_judged_once_and_kept():
    """An original cancelled before it ran (a batch's early stop) leaves its copies no verdict:
    the first copy is judged in its place (its verdict kept), the others join it, through
    submit() and through judge_here() alike; a later repeat is reused."""
    j = StepJudge(1)
    one = TestSuite([StdioCase("a", "1\n", "2\n")])
    gate = task("import time\ntime.sleep(1.5)\nprint(2)", one)  # holds the one worker
    try:
        blocker = j.submit(gate)
        original = j.submit(task(DOUBLE))  # queued behind it
        copies = [j.submit(task(DOUBLE)) for _ in range(3)]
        with ThreadPoolExecutor(1) as pool:
            here = pool.submit(j.judge_here, task(DOUBLE))
            while j.stats()["submitted"] < 6:
                threading.Event().wait(0.01)
            assert original.cancel()
            verdicts = [c.result(60) for c in copies] + [here.result(60)]
        assert blocker.result(60).outcome is Outcome.AC
        assert all(v.outcome is Outcome.AC for v in verdicts)
        assert sum(not v.cached for v in verdicts) == 1  # one of them judged, the rest its copies
        assert j.stats()["runs"] == 2 and j.judge(task(DOUBLE)).cached
    finally:
        j.close()


def test_copies_of_many_cancelled_originals_all_end():
    """150 originals cancelled while queued (a batch's timeout), each with a copy waiting: dropping them
    settled each inside the last (_pump -> settle -> copy -> _pump ...), and past the recursion limit the
    copies' futures were never completed (red team 51: 124 of 150 judged, the rest hung). Now every copy
    ends, judged once."""
    j = StepJudge(1)
    one = TestSuite([StdioCase("a", "1\n", "2\n")])
    programs = [f"print(2 * int(input()))  # {i}" for i in range(150)]
    try:
        blocker = j.submit(task("import time\ntime.sleep(1)\nprint(2)", one))
        originals = [j.submit(task(p, one)) for p in programs]
        copies = [j.submit(task(p, one)) for p in programs]
        assert all(o.cancel() for o in originals)
        verdicts = [c.result(120) for c in copies]
        assert blocker.result(60).outcome is Outcome.AC
        assert all(v.outcome is Outcome.AC for v in verdicts) and j.stats()["runs"] == 151
    finally:
        j.close()
