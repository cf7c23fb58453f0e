"""Host-wide counters a program could both move and read, closed to a session once it has
started: a second seccomp filter, stacked on the sandbox's, denies (``EPERM``) ``setsid`` (each
call takes the next autogroup id, which the next session's server then gets), ``inotify_init``
and ``inotify_init1`` (a watch reads the rename cookie every rename on the host moves) and
``getsockopt(SOL_SOCKET, SO_COOKIE | SO_NETNS_COOKIE)`` (socket cookies, handed out per CPU).
Installed by :func:`deny_counters` when a session server is armed (after its own ``setsid``,
before it forks anything: everything it forks inherits it). x86-64 only, like
the sandbox's filter. Exports: :func:`deny_counters`. See docs/sandbox.md ("Seccomp")."""

import ctypes
import os
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
SETSID, INOTIFY_INIT, INOTIFY_INIT1, GETSOCKOPT = 112, 253, 294, 55
SOL_SOCKET, SO_COOKIE, SO_NETNS_COOKIE = 1, 57, 71
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW, _RET_EPERM = 0x7FFF0000, 0x00050001
_LD, _JEQ, _RET = 0x20, 0x15, 0x06  # ld [k]; jeq #k, jt, jf; ret #k


def _program():
    """The filter: ``(code, jt, jf, k)`` rows (jumps relative, forward only)."""
    return [
        (_LD, 0, 0, 4), (_JEQ, 1, 0, AUDIT_ARCH_X86_64), (_RET, 0, 0, _RET_ALLOW),  # arch
        (_LD, 0, 0, 0),                                                             # nr
        (_JEQ, 9, 0, SETSID), (_JEQ, 8, 0, INOTIFY_INIT), (_JEQ, 7, 0, INOTIFY_INIT1),
        (_JEQ, 0, 5, GETSOCKOPT),
        (_LD, 0, 0, 24), (_JEQ, 0, 3, SOL_SOCKET),                                  # level
        (_LD, 0, 0, 32), (_JEQ, 2, 0, SO_COOKIE), (_JEQ, 1, 0, SO_NETNS_COOKIE),  # optname
        (_RET, 0, 0, _RET_ALLOW),
        (_RET, 0, 0, _RET_EPERM),
    ]


def _filter():
    """The filter as ``prctl`` takes it: ``(sock_fprog, its instructions)`` (both kept alive)."""
    rows = _program()
    code = b"".join(struct.pack("<HBBI", c, jt, jf, k) for c, jt, jf, k in rows)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = struct.pack("<H6xQ", len(rows), ctypes.addressof(buf))
    return ctypes.create_string_buffer(prog, len(prog)), buf


#: Built once (in the zygote, at import): every session server and blank forker inherits it.
_FILTER = _filter() if os.uname().machine == "x86_64" else None


def deny_counters(libc):
    """Stack the filter on this process (no_new_privs must be set); nothing elsewhere."""
    if _FILTER is None:
        return
    fprog = _FILTER[0]
    if libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.c_void_p(ctypes.addressof(fprog)),
                  ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter of the host-wide counters")
