"""The frames between the judge and the guest server (the one guest module the host imports).

A frame: a 4-byte big-endian length, a UTF-8 JSON header, then the raw bytes of each blob whose
length is listed in ``header["blobs"]``. Exports: :func:`encode_frame`, :func:`read_frame_blocking`,
:func:`read_exact`, :func:`write_all`, :data:`LEN`, :data:`MAX_HEADER`, :data:`DEFAULT_ENV`,
:data:`RESULT_FD`. Standard library only. See docs/sandbox.md.
"""

import json
import os
import struct


LEN = struct.Struct(">I")


MAX_HEADER = 16 * 1024 * 1024


#: Math libraries start one thread, whatever the host's cores: OpenBLAS (numpy's wheels, Debian's
#: libopenblas), OpenMP, MKL and numexpr would otherwise start one per core, which on a large node
#: exceeds a case's ``processes`` limit (OpenBLAS then spins: a correct program is TLE) and charges
#: the case CPU that depends on the host.
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                     "NUMEXPR_NUM_THREADS")}

#: The environment of the sandbox's server, its Python cases, and a native program run without
#: its own ``env``.
DEFAULT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/work", "LANG": "C.UTF-8", "TMPDIR": "/tmp", **ONE_THREAD}


#: The descriptor a function call's JSON result is written to.
RESULT_FD = 3


def encode_frame(header, blobs=()):
    """Return the bytes of one frame: ``header`` (a JSON-able dict) and its ``blobs`` (bytes)."""
    header = dict(header)
    header["blobs"] = [len(b) for b in blobs]
    raw = json.dumps(header, separators=(",", ":")).encode()
    return b"".join([LEN.pack(len(raw)), raw, *blobs])


def read_exact(fd, n):
    """Read exactly ``n`` bytes into one buffer (no second copy: a large stdin is memory)."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = os.readv(fd, [view[got:got + (1 << 20)]])
        if not k:
            raise EOFError("control pipe closed")
        got += k
    view.release()
    return buf


def read_frame_blocking(fd):
    """Read one frame from ``fd`` (blocking). Returns ``(header, [blob, ...])``."""
    (n,) = LEN.unpack(read_exact(fd, 4))
    if n > MAX_HEADER:
        raise ValueError("frame header too large")
    header = json.loads(read_exact(fd, n))
    blobs = [read_exact(fd, int(size)) for size in header.get("blobs", [])]
    return header, blobs


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
