"""Slow or silent clients (red team, serve): connections that sent nothing, or part of their headers, were never
closed (no token needed: enough of them and the server accepted nothing more), and a stalled upload held its
share of the body budget for ever. Now a connection has ``ARBITER_HEADER_SECONDS`` to send a request's headers,
one client address holds at most ``ARBITER_CONNECTIONS_PER_ADDRESS`` connections, and a body gets
``ARBITER_BODY_SECONDS`` plus a second per MiB (408 after), and a connection whose client leaves the answer unread
``ARBITER_SEND_SECONDS`` is aborted. Short here: 1.5 s, 4 connections, 1 s, 2 s; bodies of at most 4 MiB (a body
budget of 12 MiB)."""

from __future__ import annotations

import json
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from live_server import LiveServer

ENV = {"ARBITER_HEADER_SECONDS": "1.5", "ARBITER_CONNECTIONS_PER_ADDRESS": "4", "ARBITER_BODY_SECONDS": "1",
       "ARBITER_SEND_SECONDS": "2"}


@pytest.fixture(scope="module")
def server():
    s = LiveServer("--max-body-mb", "4", env=ENV)
    yield s
    assert s.stop() == 0


def _connect(server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closed ``sock`` within ``seconds`` (it reads end of file)."""
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
        return True
    except (socket.timeout, TimeoutError):
        return False
    except ConnectionResetError:
        return True


def test_silent_and_slow_header_connections_are_closed(server):
    silent = _connect(server)
    slow = _connect(server)
    slow.sendall(b"POST /run_code HTTP/1.1\r\nHost: x\r\n")
    cut = False
    for _ in range(20):  # a header line every 0.3 s: never done
        try:
            slow.sendall(b"X-Pad: 1\r\n")
        except (BrokenPipeError, ConnectionResetError):
            cut = True
            break
        time.sleep(0.3)
    assert cut or _closed_within(slow, 1)
    assert _closed_within(silent, 5)
    silent.close()
    slow.close()


def test_one_address_holds_a_bounded_number_of_connections(server):
    held = [_connect(server) for _ in range(4)]
    extra = _connect(server)
    assert _closed_within(extra, 3)  # closed at once: the address holds four
    for s in held:
        s.close()
    extra.close()
    time.sleep(0.2)
    assert httpx.post(server.url + "/run_code", json={"code": "print(1)", "language": "python"},
                      timeout=60).json()["run_result"]["stdout"] == "1\n"


def test_a_stalled_upload_gets_408_and_lets_go_of_the_body_budget(server):
    stalled = _connect(server)
    stalled.sendall(b"POST /run_code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n{\"code\": \"" % (4 << 20))  # its share: the whole budget
    time.sleep(0.5)
    big = "x" * (3 << 19)  # another client's body over 1 MiB: it waits for its share
    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(httpx.post, server.url + "/run_code", timeout=120,
                            json={"code": f"s = '{big}'\nprint(len(s))", "language": "python"})
        stalled.settimeout(60)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = stalled.recv(4096)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        r = other.result()
    stalled.close()
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == f"{3 << 19}\n", r.text[:300]


def test_a_request_answered_slowly_is_not_cut(server):
    """The header deadline is for the headers: a request whose answer takes longer keeps its connection."""
    r = httpx.post(server.url + "/run_code", json={"code": "import time\ntime.sleep(3)\nprint('done')",
                                                    "language": "python", "run_timeout": 10}, timeout=60)
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "done\n", r.text[:300]


def _deleted_files(pid: int) -> int:
    """Files the server holds open that are deleted (a spooled answer being streamed)."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}").endswith("(deleted)")
        except OSError:
            pass
    return n


def test_an_answer_left_unread_is_dropped_with_its_file(server):
    """Red team (serve): a client that asked for a large answer and never read it held its spooled file (64 MiB
    each, on /tmp) for as long as it kept the connection open."""
    sock = _connect(server)
    body = json.dumps({"code": "import sys\nsys.stdout.write('x' * (40 << 20))", "language": "python"}).encode()
    sock.sendall(b"POST /run_code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                 % len(body) + body)
    sock.settimeout(60)
    assert sock.recv(64).startswith(b"HTTP/1.1 200"), "no answer"  # then never read again
    deadline = time.monotonic() + 30
    while _deleted_files(server.proc.pid) == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _deleted_files(server.proc.pid) >= 1  # the answer's file, while it streams
    deadline = time.monotonic() + 30
    while _deleted_files(server.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _deleted_files(server.proc.pid) == 0
    sock.close()


def test_websocket_upgrades_do_not_use_up_an_addresss_connections(server):
    """A second red team: an ``Upgrade: websocket`` request was handed to uvicorn's WebSocket handler, which never
    gave back its connection's place: four such requests (1,024 by default) locked the address out."""
    for _ in range(6):
        sock = _connect(server)
        sock.sendall(b"GET /v1/ping HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                     b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        sock.settimeout(10)
        sock.recv(4096)
        sock.close()
    time.sleep(0.3)
    assert httpx.get(server.url + "/v1/ping", timeout=30).status_code == 200


def _unread(port: int, request: bytes, wait: float) -> int:
    """Send ``request`` with a tiny receive buffer, read nothing for ``wait`` seconds, then read what comes until
    the connection ends: the bytes received."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(request)
    time.sleep(wait)
    sock.settimeout(20)
    got = 0
    try:
        while chunk := sock.recv(1 << 16):
            got += len(chunk)
    except (ConnectionResetError, TimeoutError, socket.timeout):
        pass
    sock.close()
    return got


@pytest.mark.parametrize("path", ["/whole", "/lines"])
def test_an_answer_left_unread_ends_its_connection(path, monkeypatch):
    """A second red team: an answer written in one piece (every /v1 answer, a /run_code one up to 256 KiB) or
    streamed line by line (``?stream=1``) and never read stayed in the server's memory, with its connection and,
    for a stream, the request's share of the body budget, for as long as the client kept it open. The guarded
    protocol aborts a connection whose write buffer stays full ``SEND_SECONDS`` (a real uvicorn server here)."""
    import asyncio
    import threading

    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import Response, StreamingResponse
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    from arbiter.server import slowclients

    monkeypatch.setattr(slowclients, "SEND_SECONDS", 1.0)
    size = 32 << 20
    app = FastAPI()

    @app.get("/whole")
    async def whole():
        return Response(b"x" * size)

    @app.get("/lines")
    async def lines():
        async def gen():
            for _ in range(size >> 20):
                yield b"y" * (1 << 20)
        return StreamingResponse(gen())

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", ws="none",
                                          http=slowclients.guarded(AutoHTTPProtocol)))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        got = _unread(port, b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode(), 4.0)
        assert got < size, got  # cut: the server let go of the rest
        read = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=60)  # a client that reads gets it all
        assert len(read.content) == size
    finally:
        server.should_exit = True
        thread.join(10)
