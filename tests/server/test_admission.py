"""The fair queue's admission: a burst that idle judge slots are about to take is admitted (a
slot wakes a moment after a submit), and the queue's cap holds once the slots are busy."""

from __future__ import annotations

import threading
import time

import pytest

from arbiter.server.admission import FairQueue, Refused, Tenant


def test_a_burst_for_idle_slots_is_admitted_and_the_cap_holds_once_they_are_busy():
    release = threading.Event()
    q = FairQueue(1, queue=1)
    try:
        who = Tenant("t")
        first = q.submit(who, "a", [lambda slot: release.wait(30)])[0]
        second = q.submit(who, "b", [lambda slot: "b"])[0]  # whether or not the slot took the first yet
        deadline = time.monotonic() + 30
        while not first.running():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        with pytest.raises(Refused) as refused:  # one running, one waiting: the queue of 1 is full
            q.submit(who, "c", [lambda slot: "c"])
        assert refused.value.status == 503 and refused.value.reason == "server_queue"
        release.set()
        assert first.result(30) is True and second.result(30) == "b"
        assert q.submit(who, "d", [lambda slot: "d"])[0].result(30) == "d"
    finally:
        release.set()
        q.close()
