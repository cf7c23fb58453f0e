"""A seccomp filter for everything that runs in the sandbox (installed by ``bwrap --seccomp``).

Namespaces already hide the network, other processes and the host's files. The filter closes the
channels that namespaces do not wipe between the cases of one sandbox, and kernel interfaces a
judged program never needs (isolate 2.4+ blocks the same families, reference/sandboxing.md §1):

- System V shared memory, semaphores and message queues, and POSIX message queues: objects that
  outlive the process that made them, so a program could leave its answers for its next run
  (state across cases would let a measured program replay instead of compute);
- kernel keyrings (``add_key``, ``request_key``, ``keyctl``): per-uid storage that survives too;
- ``ptrace``, ``process_vm_readv``/``writev``: reaching into other processes of the sandbox;
- ``io_uring_*``, ``userfaultfd``, ``bpf``, ``perf_event_open``: large kernel attack surface;
- every system call of a foreign ABI (32-bit ``int 0x80``, x32), which would bypass a filter
  written for x86-64 numbers: the process is killed.

Blocked calls fail with ``EPERM``. The filter is x86-64 only; on other machines
:func:`filter_bytes` returns ``None`` and sandboxes run without it (``arbiter doctor`` says so).
"""

from __future__ import annotations

import platform
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

#: x86-64 system call numbers denied with EPERM (see the module docstring for why).
DENIED_X86_64: dict[str, int] = {
    "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66,
    "shmdt": 67, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "ptrace": 101,
    "semtimedop": 220, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242,
    "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245, "add_key": 248,
    "request_key": 249, "keyctl": 250, "perf_event_open": 298, "process_vm_readv": 310,
    "process_vm_writev": 311, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427,
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def filter_bytes() -> bytes | None:
    """The classic-BPF program (``struct sock_filter[]``, little endian) for ``bwrap --seccomp``;
    ``None`` when this machine is not x86-64."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    nrs = sorted(set(DENIED_X86_64.values()))
    prog: list[bytes] = []
    n = 5 + len(nrs) + 2  # arch load/check/kill, nr load, x32 check, one per nr, allow, deny
    deny = n - 1
    prog.append(_insn(_LD_W_ABS, 0, 0, 4))                      # 0: A = arch
    prog.append(_insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64))          # 1: x86-64? skip the kill
    prog.append(_insn(_RET_K, 0, 0, RET_KILL_PROCESS))           # 2: foreign ABI: kill
    prog.append(_insn(_LD_W_ABS, 0, 0, 0))                      # 3: A = nr
    i = len(prog)
    prog.append(_insn(_JGE_K, deny - i - 1, 0, X32_SYSCALL_BIT))  # 4: x32 ABI: deny
    for nr in nrs:
        i = len(prog)
        prog.append(_insn(_JEQ_K, deny - i - 1, 0, nr))
    prog.append(_insn(_RET_K, 0, 0, RET_ALLOW))
    prog.append(_insn(_RET_K, 0, 0, RET_ERRNO_EPERM))
    assert len(prog) == n and deny - 4 - 1 < 256
    return b"".join(prog)
