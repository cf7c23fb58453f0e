"""The server's memory per request is bounded whatever the request: the body budget (large bodies
wait for their share; the bytes held never exceed the budget, with a length or without), and an
answer's raw output is freed as soon as it is spooled (no reference cycle keeps a run's stdout
until the garbage collector's next pass). No timings: bytes held and references counted."""

from __future__ import annotations

import asyncio
import base64
import binascii
import gc
import json
import sys
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from live_server import LiveServer

from arbiter.server import answer
from arbiter.server.budget import BODY_COPIES, ByteBudget
from arbiter.server.runcode import BadRequest, from_base64

MIB = 1 << 20


def test_budget_in_flight_total_never_exceeds_its_cap():
    budget = ByteBudget(192 * MIB)
    seen: list[int] = []

    async def body(size: int) -> None:
        share = budget.share(size)
        await budget.acquire(share)
        for _ in range(5):  # parsing: other requests run meanwhile
            seen.append(budget.held)
            await asyncio.sleep(0)
        await budget.release(share)

    async def main() -> None:
        await asyncio.gather(*(body(53 * MIB) for _ in range(8)), *(body(2 * MIB) for _ in range(8)))

    asyncio.run(main())
    assert max(seen) <= budget.total and budget.peak <= budget.total
    assert budget.peak >= BODY_COPIES * 53 * MIB  # a large body did hold its share
    assert budget.waited >= 7 and budget.held == 0  # one 53 MiB body at a time: the others waited


def test_a_share_is_at_most_the_whole_budget():
    budget = ByteBudget(10 * MIB)
    assert budget.share(64 * MIB) == 10 * MIB and budget.share(MIB) == BODY_COPIES * MIB
    with pytest.raises(ValueError):
        asyncio.run(budget.acquire(11 * MIB))


def test_spooling_an_answer_leaves_no_reference_to_its_output():
    data = b"\x01" * (3 * MIB)
    before = sys.getrefcount(data)
    gc.disable()
    try:
        raw = answer.Raw(data, False)
        spooled = answer.spool({"run_result": {"stdout": raw, "extra": [raw]}})
        del raw
        assert sys.getrefcount(data) == before  # nothing but the caller holds it: freed when they drop it
    finally:
        gc.enable()
    text = json.loads(spooled.read())
    assert base64.b64decode(text["run_result"]["stdout"]) == data


@pytest.fixture(scope="module")
def server():
    s = LiveServer("--body-budget-mb", "8", "--max-output-mb", "4")
    yield s
    assert s.stop() == 0


def _request(i: int) -> bytes:
    data = bytes([i]) * (2 * MIB)
    return json.dumps({"code": "print(open('in.bin', 'rb').read(1))", "language": "python",
                       "files": {"in.bin": base64.b64encode(data).decode()},
                       "fetch_files": ["in.bin"] + ["./" * k + "in.bin" for k in range(1, 40)]}).encode()


def test_eight_large_bodies_hold_at_most_the_budget(server):
    bodies = [_request(i) for i in range(8)]  # 2.7 MiB each: a share of 8 MiB (the whole budget)

    def send(i: int) -> httpx.Response:
        return httpx.post(server.url + "/run_code", content=bodies[i], timeout=300,
                          headers={"Content-Type": "application/json"})

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, range(8)))
    for i, r in enumerate(answers):
        assert r.status_code == 200, r.text[:300]
        assert r.json()["run_result"]["stdout"] == repr(bytes([i])) + "\n"
        assert list(r.json()["files"]) == ["in.bin"]  # 40 spellings, one file
    m = server.metrics()
    assert m["arbiter_body_budget_bytes"] == 8 * MIB
    assert m["arbiter_body_bytes_held_max"] == 8 * MIB  # each body held the whole budget, one at a time
    assert m["arbiter_body_bytes_held"] == 0


def test_a_body_without_a_length_takes_a_share_too():
    body = _request(7)

    def chunks():
        for i in range(0, len(body), 64 * 1024):
            yield body[i:i + 64 * 1024]

    s = LiveServer("--body-budget-mb", "8", "--max-output-mb", "4")
    try:
        r = httpx.post(s.url + "/run_code", content=chunks(), timeout=300, headers={"Content-Type": "application/json"})
        assert r.request.headers.get("transfer-encoding") == "chunked"
        assert r.status_code == 200, r.text[:300]
        m = s.metrics()
    finally:
        assert s.stop() == 0
    assert m["arbiter_body_bytes_held_max"] == 8 * MIB  # the share of the largest body once past 1 MiB
    assert m["arbiter_body_bytes_held"] == 0


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet="ABCxyz019+/=\n -_é", max_size=40), st.binary(max_size=30).map(
    lambda b: base64.b64encode(b).decode())))
def test_files_base64_is_read_as_b64decode_validate_reads_it(text):
    try:
        want = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        want = None
    try:
        got = from_base64(text, "files['x']")
    except BadRequest as exc:
        assert "files['x']: not base64" in str(exc)
        got = None
    assert got == want


def test_a_large_files_entry_costs_its_decoded_bytes_not_an_ascii_copy_too():
    text = base64.b64encode(b"\x02" * (12 * MIB)).decode()
    tracemalloc.start()
    try:
        data = from_base64(text, "files['x']")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert data == b"\x02" * (12 * MIB) and peak < 1.1 * len(data)
