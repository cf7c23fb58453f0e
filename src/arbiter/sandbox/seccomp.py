"""A seccomp filter for everything that runs in the sandbox (installed by ``bwrap --seccomp``).

It closes the channels namespaces do not wipe between the cases of one sandbox (System V IPC, POSIX
message queues, keyrings) or of one session (every socket but a Unix one: no network, so no
counter, TIME_WAIT socket or route a case leaves for the next), files sent over a socket
(``sendmsg`` only on descriptors at or above :func:`fd_floor`, which no case can have: files in
flight are memory no process holds), kernel AIO (its rings are freed after the process, so a
run's baseline held them), reaching into other processes, large kernel interfaces,
foreign ABIs, and changes to PID 1's rlimits and scheduling. Blocked calls fail with ``EPERM``;
x86-64 only (:func:`filter_bytes` is ``None`` elsewhere). The list and the reasons:
docs/sandbox.md ("Seccomp")."""

from __future__ import annotations

import platform
import resource
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO_EPERM = 0x00050000 | 1

# BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06

#: Offsets in ``struct seccomp_data``: the low and high 32 bits of system call argument i.
def _arg_lo(i: int) -> int:
    return 16 + 8 * i


def _arg_hi(i: int) -> int:
    return 20 + 8 * i

#: x86-64 system call numbers denied with EPERM (see the module docstring for why).
DENIED_X86_64: dict[str, int] = {
    "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66,
    "shmdt": 67, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "ptrace": 101,
    "semtimedop": 220, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242,
    "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245, "add_key": 248,
    "request_key": 249, "keyctl": 250, "perf_event_open": 298, "process_vm_readv": 310,
    "process_vm_writev": 311, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "sendmmsg": 307, "pidfd_getfd": 438,
    "io_setup": 206, "io_destroy": 207, "io_getevents": 208, "io_submit": 209, "io_cancel": 210,
    "io_pgetevents": 333,
}


#: x86-64 system calls allowed or denied by their arguments (PID 1 is the sandbox's server).
PRLIMIT64, SETPRIORITY, IOPRIO_SET = 302, 141, 251
SOCKET, AF_UNIX = 41, 1  # socket(domain, ...): AF_UNIX only
SENDMSG = 46  # sendmsg(fd, ...): fd at or above the floor only
#: The highest descriptor floor (a server's descriptor table reaches it: every fork copies it).
MAX_FD_FLOOR = 1024
SCHED_ON_PID = {"sched_setparam": 142, "sched_setscheduler": 144, "sched_setaffinity": 203,
                "sched_setattr": 314}
PRIO_PROCESS = 0  # setpriority's "which"
IOPRIO_WHO_PROCESS = 1  # ioprio_set's "which"


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


class _Assembler:
    """Classic BPF with forward jumps to named labels (resolved when assembled; classic BPF
    jumps only forward, at most 255 instructions)."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def emit(self, code: int, k: int = 0, jt: str | int = 0, jf: str | int = 0) -> None:
        self.code.append((code, jt, jf, k))

    def assemble(self) -> bytes:
        out = []
        for i, (code, jt, jf, k) in enumerate(self.code):
            rel = [self.labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf)]
            assert all(0 <= r < 256 for r in rel), (i, rel)  # forward jumps only
            out.append(_insn(code, rel[0], rel[1], k))
        return b"".join(out)


def fd_floor() -> int:
    """The descriptor floor of a sandbox started by this process: below its hard
    ``RLIMIT_NOFILE`` (which the sandbox inherits: its server must reach the floor), at most
    :data:`MAX_FD_FLOOR` (a case's ``open_files`` is capped by it)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return MAX_FD_FLOOR if hard == resource.RLIM_INFINITY else max(1, min(MAX_FD_FLOOR, hard - 1))


def filter_bytes(floor: int | None = None) -> bytes | None:
    """The classic-BPF program (``struct sock_filter[]``, little endian) for ``bwrap --seccomp``,
    ``sendmsg`` allowed on descriptors from ``floor`` (default :func:`fd_floor`) up; ``None``
    when this machine is not x86-64."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    floor = fd_floor() if floor is None else floor
    a = _Assembler()
    a.emit(_LD_W_ABS, 4)                                        # A = arch
    a.emit(_JEQ_K, AUDIT_ARCH_X86_64, jt=1)                     # x86-64? skip the kill
    a.emit(_RET_K, RET_KILL_PROCESS)                            # foreign ABI: kill
    a.emit(_LD_W_ABS, 0)                                        # A = nr
    a.emit(_JGE_K, X32_SYSCALL_BIT, jt="deny")                  # x32 ABI: deny
    for nr in sorted(set(DENIED_X86_64.values())):
        a.emit(_JEQ_K, nr, jt="deny")
    a.emit(_JEQ_K, PRLIMIT64, jt="prlimit64")
    a.emit(_JEQ_K, SETPRIORITY, jt="process_not_1")
    a.emit(_JEQ_K, IOPRIO_SET, jt="ioprio_set")
    a.emit(_JEQ_K, SOCKET, jt="socket")
    a.emit(_JEQ_K, SENDMSG, jt="sendmsg")
    for nr in sorted(SCHED_ON_PID.values()):
        a.emit(_JEQ_K, nr, jt="arg0_not_1")
    a.label("allow")
    a.emit(_RET_K, RET_ALLOW)
    a.label("prlimit64")                                        # pid 1 and a new limit: deny
    a.emit(_LD_W_ABS, _arg_lo(0))
    a.emit(_JEQ_K, 1, jf="allow_args")
    a.emit(_LD_W_ABS, _arg_lo(2))
    a.emit(_JEQ_K, 0, jf="deny")
    a.emit(_LD_W_ABS, _arg_hi(2))
    a.emit(_JEQ_K, 0, jt="allow_args", jf="deny")
    a.label("socket")                                           # a Unix socket only
    a.emit(_LD_W_ABS, _arg_lo(0))
    a.emit(_JEQ_K, AF_UNIX, jt="allow_args", jf="deny")
    a.label("sendmsg")                                          # the server's sockets only
    a.emit(_LD_W_ABS, _arg_lo(0))
    a.emit(_JGE_K, floor, jt="allow_args", jf="deny")
    a.label("ioprio_set")                                       # which must be one process
    a.emit(_LD_W_ABS, _arg_lo(0))
    a.emit(_JEQ_K, IOPRIO_WHO_PROCESS, jt="who_not_1", jf="deny")
    a.label("process_not_1")                                    # setpriority: which, who
    a.emit(_LD_W_ABS, _arg_lo(0))
    a.emit(_JEQ_K, PRIO_PROCESS, jt="who_not_1", jf="deny")
    a.label("who_not_1")
    a.emit(_LD_W_ABS, _arg_lo(1))
    a.emit(_JEQ_K, 1, jt="deny", jf="allow_args")
    a.label("arg0_not_1")
    a.emit(_LD_W_ABS, _arg_lo(0))
    a.emit(_JEQ_K, 1, jt="deny")
    a.label("allow_args")
    a.emit(_RET_K, RET_ALLOW)
    a.label("deny")
    a.emit(_RET_K, RET_ERRNO_EPERM)
    return a.assemble()
