"""What a sandbox's cgroups may hold between runs, seen from the host: the session server, its
forker (the server's one child) and the next case's process the forker forked ahead (the
forker's one child); docs/sandbox.md, "The forker"."""

from __future__ import annotations


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None  # gone


def extra_tasks(sb) -> list[int]:
    """Host pids in ``sb``'s cgroups other than its session server, the server's one child (the
    forker) and that child's one child (the case forked ahead); [] without cgroups."""
    if sb._cg is None:
        return []
    server = sb.session.server_pid
    tasks = [p for p in sb.session.tasks() if p != server]
    parents = {p: _ppid(p) for p in tasks}
    tasks = [p for p in tasks if parents[p] is not None]
    own = [p for p in tasks if parents[p] == server]
    allowed = {server}
    if len(own) == 1:
        allowed.add(own[0])
        waiting = [p for p in tasks if parents[p] == own[0]]
        if len(waiting) == 1:
            allowed.add(waiting[0])
    return [p for p in tasks if p not in allowed]
