"""After each case: kill and reap every process it left, wipe the scratch directories.

Exports (functions over a :class:`~.state.ServerState`): :func:`kill_all`, :func:`reap_all`,
:func:`only_forker_left`, :func:`wipe_scratch`; and :func:`empty_dir`. ``state.zombie`` is the
case the forker reported, left a zombie for the forker to reap (:func:`only_forker_left`);
:func:`.forked_case.await_zombie` waits it out after the reply. See docs/sandbox.md.
"""

import errno
import os
import signal

from .kernel import children, namespace_pids, open_children, parent_pid, sigkill_each
from .reports import REPORT_GRACE
from .state import DIR_FLAGS


def only_forker_left(state, forker, case):
    """True when nothing but this server, the forker (a :class:`~.forker.Forker`) and its
    exited ``case`` is left in the namespace: this server's only child is the forker, whose
    only child (if any) is the case (a zombie the forker reaps next: :func:`.forked_case.await_zombie`).
    Every process of the namespace descends from this server (PID 1: orphans are
    reparented to it), so these two lists see them all. False when not PID 1."""
    if not state.is_init or case is None:
        return False
    if state.own_children_fd is None:
        state.own_children_fd = open_children(os.getpid())
    if children(state.own_children_fd) != [forker.pid]:
        return False
    left = forker.children()
    if left == [case]:
        state.zombie = (case, forker)
        return True
    return left == []


def kill_all(state, pid, keep=None):
    """SIGKILL every process the case left: as PID 1 everything in this PID namespace but this
    server (``kill(-1)``), or but this server and ``keep`` (the forker); else the case's
    process group."""
    try:
        if not state.is_init:
            os.killpg(pid, signal.SIGKILL)
        elif keep is None:
            os.kill(-1, signal.SIGKILL)  # everything in this PID namespace but us
        else:
            sigkill_each(namespace_pids(keep))
    except ProcessLookupError:
        pass


def kill_until_none_new(keep, killed=()):
    """As PID 1: SIGKILL every process but this server and ``keep`` until a scan of ``/proc``
    shows none it has not killed (``killed``: pids known killed already). A process forking
    while the kill walks the list leaves children only the next scan finds; the killed may
    still be exiting (nothing of them runs any more)."""
    killed = set(killed)
    while True:
        new = [pid for pid in namespace_pids(keep) if pid not in killed]
        if not new:
            return
        sigkill_each(new)
        killed.update(new)


def reap_all(state, keep=None, keeps_child=None):
    """Wait for every process left in the namespace (but ``keep``). As PID 1, kill again
    before each wait, so a process forked while the kill was walking the list dies too.
    Returns False when the others could not all be reaped while sparing ``keep`` (and
    waiting for ``keeps_child``, the case ``keep`` is reaping)."""
    if keep is not None and state.is_init:
        return _reap_all_but(state, keep, keeps_child)
    while True:
        if state.is_init:
            kill_all(state, 0)
        try:
            pid, _ = os.waitpid(-1, 0 if state.is_init else os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return True


def _reap_all_but(state, keep, keeps_child=None):
    """:func:`reap_all` sparing ``keep``: a blocking ``waitpid(-1)`` could wait for it
    forever, so kill what ``/proc`` lists, reap without blocking, and scan again until the
    namespace holds only this server and ``keep``. Processes forked meanwhile show up in
    the next scan; SIGKILLed ones cannot fork any more. Reaping ``keep`` (it died) is left
    to the caller's check. Returns False when a process stays that only ``keep`` could reap
    (a zombie whose parent it is: ``clone(CLONE_PARENT)`` from its child) other than
    ``keeps_child`` (the forker reaps it right after its report), or any process after
    :data:`REPORT_GRACE`: the caller then kills ``keep`` too."""
    import time
    give_up = time.monotonic() + REPORT_GRACE
    while True:
        others = namespace_pids(keep)
        if not others:
            return True
        sigkill_each(others)
        reaped = False
        for other in others:
            try:
                if os.waitpid(other, os.WNOHANG)[0]:
                    reaped = True
            except ChildProcessError:
                pass  # not ours (yet): its parent is dying, then it is reparented to us
        if not reaped:
            fk = state.forker
            if (others == [keeps_child] and fk is not None and fk.pid == keep
                    and _zombie_of(keeps_child, keep)):
                state.zombie = (keeps_child, fk)  # dead: see forked_case.await_zombie
                return True
            if time.monotonic() > give_up or any(
                    p != keeps_child and parent_pid(p) == keep for p in others):
                return False
            time.sleep(0.0002)


def wipe_scratch(state):
    """Empty every scratch directory but the kept files (:func:`empty_dir`), and give the
    directory itself back its mode, no extended attributes, and times set to now. Raises
    OSError when something could not be removed (then nothing more may run here)."""
    for d, (fd, mode) in state.scratch_fds.items():
        try:
            st = os.fstat(fd)
            if st.st_mode & 0o7777 != mode:
                os.fchmod(fd, mode)  # chmod 0 would hide its files from the wipe
            for name in os.listxattr(fd):
                os.removexattr(fd, name)
            os.utime(fd)  # (always: when it was last set would tell what an earlier case did)
        except OSError:
            st = None
        if state.is_init and st is not None and st.st_size == _TMPFS_EMPTY_DIR_SIZE:
            continue  # a tmpfs directory's size counts its entries: none
        empty_dir(fd, {os.path.basename(p) for p in state.kept_files
                        if os.path.dirname(p) == d} if state.kept_files else ())


def _zombie_of(pid, parent):
    """True when ``pid`` is a zombie (it has exited: it can do nothing, and holds no memory) whose
    parent is ``parent`` (``/proc/<pid>/stat``). While it is a zombie its pid is not reused."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[0] == b"Z" and int(fields[1]) == parent
    except (OSError, ValueError, IndexError):
        return False


#: The size of an empty tmpfs directory (its ``.`` and ``..``; each entry adds 20: the kernel's
#: ``BOGO_DIRENT_SIZE``). In the sandbox the scratch dirs are tmpfs mounts (bwrap ``--tmpfs``).
_TMPFS_EMPTY_DIR_SIZE = 40


def empty_dir(top, keep=()):
    """Remove everything in the directory open as ``top`` but the names in ``keep``, whatever
    tree a program built there, in constant memory and with two descriptors at a time (a
    20,000-deep chain of directories once overflowed ``shutil.rmtree``): clear a directory of
    files and empty directories; at its first non-empty one, go down (``openat(name,
    O_NOFOLLOW)``, mode 0700 first: a program may have made it unreadable, unsearchable or
    unwritable); once one is empty, go back up by ``".."`` and clear the parent again (which
    removes the emptied one). Nothing else runs while it wipes: the tree cannot change under it.
    Raises OSError when an entry stays. ``top`` stays open."""
    fd, depth = top, 0  # the directory we are in (ours to close unless it is top)
    try:
        while True:
            child = _clear_dir(fd, keep if depth == 0 else ())
            if child is not None:
                try:
                    cfd = os.open(child, DIR_FLAGS, dir_fd=fd)
                except PermissionError:  # not readable
                    os.chmod(child, 0o700, dir_fd=fd)
                    cfd = os.open(child, DIR_FLAGS, dir_fd=fd)
                os.fchmod(cfd, 0o700)  # searchable and writable: its entries can go, ".." opens
                depth += 1
            elif depth:
                cfd = os.open("..", DIR_FLAGS, dir_fd=fd)
                depth -= 1
            else:
                return
            if fd != top:
                os.close(fd)
            fd = cfd if depth else top
            if not depth:
                os.close(cfd)
    finally:
        if fd != top:
            os.close(fd)


def _clear_dir(fd, keep):
    """Remove the files and empty directories (but the names in ``keep``) of the directory open
    as ``fd``, up to its first non-empty directory; returns that one's name, or None."""
    with os.scandir(fd) as entries:  # (removing while listing: tmpfs's cursor allows it)
        for e in entries:
            name = e.name
            if name in keep:
                continue
            if not e.is_dir(follow_symlinks=False):
                os.unlink(name, dir_fd=fd)
                continue
            try:
                os.rmdir(name, dir_fd=fd)  # an empty one goes at once, whatever its mode
            except OSError as exc:
                if exc.errno != errno.ENOTEMPTY:
                    raise
                return name
    return None
