"""The host directory of each sandbox (its ``/prog`` files, the unisolated scratch dirs) and the
sweep that removes those of judges that died without closing their sandboxes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from typing import Mapping

from arbiter.sandbox import cgroups

#: Host directory of each sandbox: ``<tempdir>/arbiter-sbx-<judge pid>-XXXXXXXX``.
TMP_PREFIX = "arbiter-sbx-"
#: Seconds between two sweeps for directories of dead judges (the first sandbox of a process
#: always sweeps).
PRUNE_INTERVAL = 600.0
_next_prune = 0.0
_prune_lock = threading.Lock()


def new_dir() -> str:
    """A new host directory for one sandbox (mode 0755), with an empty ``prog`` folder."""
    tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-")
    os.chmod(tmp, 0o755)
    os.mkdir(os.path.join(tmp, "prog"), 0o755)
    return tmp


def write_prog(tmp: str, files: Mapping[str, bytes]) -> str:
    """Write ``files`` (plain names; mode 0755, so binaries run) into ``tmp/prog``; returns it."""
    prog = os.path.join(tmp, "prog")
    for name, data in files.items():
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"sandbox file names must be plain names, got {name!r}")
        path = os.path.join(prog, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, 0o755)
    return prog


def prune_stale_dirs() -> int:
    """Remove the host directories of sandboxes whose judge process died without closing them
    (e.g. SIGKILLed): ``arbiter-sbx-<pid>-*`` in the temp directory, owned by this user, whose
    ``pid`` is not alive. At most once per :data:`PRUNE_INTERVAL` per process. Directories of live
    processes, and of the old unnamed form ``arbiter-sbx-XXXXXXXX``, are left alone. Returns how
    many were removed."""
    global _next_prune
    with _prune_lock:
        now = time.monotonic()
        if now < _next_prune:
            return 0
        _next_prune = now + PRUNE_INTERVAL
    base = tempfile.gettempdir()
    removed = 0
    try:
        entries = list(os.scandir(base))
    except OSError:
        return 0
    me = os.geteuid()
    for e in entries:
        pid, sep, rest = e.name[len(TMP_PREFIX):].partition("-")
        if (not e.name.startswith(TMP_PREFIX) or not sep or not rest or not pid.isdigit()
                or cgroups.pid_alive(int(pid))):
            continue
        try:
            st = e.stat(follow_symlinks=False)
            if not e.is_dir(follow_symlinks=False) or st.st_uid != me:
                continue
        except OSError:
            continue
        shutil.rmtree(e.path, ignore_errors=True)
        removed += not os.path.lexists(e.path)
    return removed
