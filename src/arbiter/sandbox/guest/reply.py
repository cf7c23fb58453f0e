"""The one reply of each request: a frame tagged with the request's ``id``, written once.

Exports (over a :class:`~.state.ServerState`): :func:`reply`, :func:`reply_with_fds`.
See docs/sandbox.md ("Frames").
"""

import json
import os

from .protocol import LEN, encode_frame, write_all

#: A reply whose blobs are this small is read into memory and written at once, not streamed.
ONE_WRITE_BYTES = 1 << 16


def reply(state, header, blobs=()):
    """Send the one reply of the current request (tagged with its ``id``)."""
    _start_reply(state)
    write_all(state.out_fd, encode_frame(dict(header, id=state.request_id), blobs))


def _start_reply(state):
    if state.replied:
        raise RuntimeError("a second reply to request %r" % (state.request_id,))
    state.replied = True


def reply_with_fds(state, header, fds_and_sizes):
    """Reply with blobs streamed from file descriptors (no copy through Python memory); an
    item may also be plain bytes."""
    _start_reply(state)
    header = dict(header, id=state.request_id)
    header["blobs"] = [len(item) if isinstance(item, bytes) else item[1] for item in fds_and_sizes]
    raw = json.dumps(header, separators=(",", ":")).encode()
    if sum(header["blobs"]) <= ONE_WRITE_BYTES:  # a small reply: one write, one wake-up
        parts = [LEN.pack(len(raw)), raw]
        for item in fds_and_sizes:
            parts.append(item if isinstance(item, bytes) else _pread_all(*item))
        write_all(state.out_fd, b"".join(parts))
        return
    write_all(state.out_fd, LEN.pack(len(raw)) + raw)
    for item in fds_and_sizes:
        if isinstance(item, bytes):
            write_all(state.out_fd, item)
            continue
        fd, size = item
        offset = 0
        while offset < size:
            sent = os.sendfile(state.out_fd, fd, offset, size - offset)
            if sent <= 0:
                raise OSError("sendfile sent nothing")
            offset += sent


def _pread_all(fd, size):
    """The first ``size`` bytes of the file open as ``fd`` (its offset untouched)."""
    data = os.pread(fd, size, 0)
    while len(data) < size:
        more = os.pread(fd, size - len(data), len(data))
        if not more:
            raise OSError("the file is shorter than it was")
        data += more
    return data
