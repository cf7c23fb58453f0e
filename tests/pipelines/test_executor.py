"""The ordered, bounded parallel map of the batch jobs (arbiter.pipelines.executor)."""

from __future__ import annotations

import threading
import time

import pytest

from arbiter.pipelines.executor import ThreadBackend, ordered_map, unordered_map


def test_results_come_in_input_order_whatever_finishes_first():
    def slow_first(x: int) -> int:
        time.sleep(0.05 if x == 0 else 0.0)
        return x * x

    assert list(ordered_map(slow_first, range(20), workers=4)) == [(x, x * x) for x in range(20)]


def test_items_are_pulled_lazily_and_in_flight_is_bounded():
    pulled = 0
    running = 0
    peak = 0
    lock = threading.Lock()

    def items():
        nonlocal pulled
        for i in range(100):
            pulled += 1
            yield i

    def work(x: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.001)
        with lock:
            running -= 1
        return x

    it = ordered_map(work, items(), workers=2, in_flight=4)
    first = next(it)
    assert first == (0, 0) and pulled <= 6  # the window, not the whole input
    rest = list(it)
    assert len(rest) == 99 and peak <= 2


def test_pass_through_items_keep_their_place():
    out = list(ordered_map(lambda x: x + 100, range(6), workers=2, submit_if=lambda x: x % 2 == 0))
    assert out == [(0, 100), (1, None), (2, 102), (3, None), (4, 104), (5, None)]


def test_an_error_surfaces_at_its_turn_and_the_rest_is_cancelled():
    started: list[int] = []

    def work(x: int) -> int:
        started.append(x)
        if x == 3:
            raise RuntimeError("boom")
        return x

    it = ordered_map(work, range(1000), workers=1, in_flight=2)
    assert [next(it) for _ in range(3)] == [(0, 0), (1, 1), (2, 2)]
    with pytest.raises(RuntimeError, match="boom"):
        next(it)
    assert len(started) < 10


def test_consumer_stopping_early_cancels_pending_work():
    done: list[int] = []
    gen = ordered_map(lambda x: done.append(x) or x, range(10_000), workers=2)
    next(gen)
    gen.close()
    assert len(done) < 100


def test_a_given_backend_is_used_and_left_open():
    backend = ThreadBackend(3, name="t-exec")
    names: set[str] = set()
    list(ordered_map(lambda x: names.add(threading.current_thread().name), range(30), backend=backend))
    assert names and all(n.startswith("t-exec") for n in names)
    assert [r for _, r in ordered_map(lambda x: -x, range(3), backend=backend)] == [0, -1, -2]
    backend.close()
    with pytest.raises(ValueError, match="workers must be >= 1"):
        ThreadBackend(0)


def test_unordered_map_yields_everything_once_bounded():
    out = list(unordered_map(lambda x: x * 2, range(50), workers=3, in_flight=3))
    assert sorted(out) == [(x, 2 * x) for x in range(50)]
    with pytest.raises(ZeroDivisionError):
        list(unordered_map(lambda x: 1 // (x - 5), range(10), workers=2))
