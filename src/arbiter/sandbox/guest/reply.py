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
    item may also be plain bytes. Closes the descriptors, all of them before the reply's last
    byte: the judge, once it has the whole reply, measures the next run, and a run's stdout
    memfd still open then would be in that run's memory baseline, freed while it runs (its
    peak low by that much: docs/sandbox.md, "Memory"). A failure before anything of it was
    written (a file shorter than it was: a process of the program's truncated it) leaves the
    reply unsent, for the caller's error reply."""
    streamed = False
    try:
        _start_reply(state)
        header = dict(header, id=state.request_id)
        header["blobs"] = [len(item) if isinstance(item, bytes) else item[1] for item in fds_and_sizes]
        raw = json.dumps(header, separators=(",", ":")).encode()
        if sum(header["blobs"]) <= ONE_WRITE_BYTES:  # a small reply: one write, one wake-up
            parts = [LEN.pack(len(raw)), raw]
            for item in fds_and_sizes:
                parts.append(item if isinstance(item, bytes) else _pread_all(*item))
            last = b"".join(parts)
        else:
            streamed = True  # (its head goes out first: a failure after it leaves a partial frame)
            last = _stream(state.out_fd, LEN.pack(len(raw)) + raw, fds_and_sizes)
    except BaseException:
        if not streamed:  # nothing of it sent: the server still replies (an error)
            state.replied = False
        raise
    finally:
        for item in fds_and_sizes:
            if not isinstance(item, bytes):
                os.close(item[0])
    write_all(state.out_fd, last)


def _stream(out_fd, head, items):
    """Write ``head`` and then each item (bytes, or ``(fd, size)`` sent by ``sendfile``) but the
    final byte of the last non-empty one, which is returned for the caller to write."""
    sizes = [len(item) if isinstance(item, bytes) else item[1] for item in items]
    final = max(i for i, size in enumerate(sizes) if size)
    write_all(out_fd, head)
    for i, item in enumerate(items):
        end = sizes[i] - 1 if i == final else sizes[i]
        if isinstance(item, bytes):
            write_all(out_fd, item[:end])
            continue
        fd, offset = item[0], 0
        while offset < end:
            sent = os.sendfile(out_fd, fd, offset, end - offset)
            if sent <= 0:
                raise OSError("sendfile sent nothing")
            offset += sent
    item = items[final]
    if isinstance(item, bytes):
        return item[-1:]
    last = os.pread(item[0], 1, sizes[final] - 1)
    if not last:
        raise OSError("the file is shorter than it was")
    return last


def _pread_all(fd, size):
    """The first ``size`` bytes of the file open as ``fd`` (its offset untouched)."""
    data = os.pread(fd, size, 0)
    while len(data) < size:
        more = os.pread(fd, size - len(data), len(data))
        if not more:
            raise OSError("the file is shorter than it was")
        data += more
    return data
