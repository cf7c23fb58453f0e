"""Reading the counting tool's log: the count (its last line), a refused client request, code change or write to
the meter's memory, an instruction valgrind cannot decode.

Why only the last line counts and what the tool refuses: ``docs/measurement.md``.
"""

from __future__ import annotations

import re

__all__ = [
    "CLIENT_REQUEST_REASON",
    "MODIFIES_CODE_REASON",
    "WRITES_METER_REASON",
    "meter_reason",
    "parse_cachegrind_log",
    "refused_client_request",
    "refused_code_change",
    "refused_meter_write",
    "undecodable_instruction",
]


#: The reason of a :attr:`MeasureStatus.CLIENT_REQUEST` failure (the start of its detail).
CLIENT_REQUEST_REASON = "program makes valgrind client requests; its cost cannot be measured"


#: The reason of a :attr:`MeasureStatus.MODIFIES_CODE` failure (the start of its detail).
MODIFIES_CODE_REASON = ("program writes or maps executable code at run time; the meter could run other code than "
                        "the processor, so its cost cannot be measured")


#: The reason of a :attr:`MeasureStatus.WRITES_METER` failure (the start of its detail).
WRITES_METER_REASON = ("program writes into the meter's own memory (valgrind's or the counting tool's) or opens its "
                       "process's memory file for writing, where it could change its own figures; its cost cannot be "
                       "measured")


#: The tool's line when it refuses a write to its memory (``==PID== arbiter-count: refused write to the meter's
#: memory: <what> at 0x...``).
_METER_WRITE = re.compile(rb"^==\d+== arbiter-count: refused write to the meter's memory: ([^\n]*)$", re.MULTILINE)


#: The tool's line when it refuses a code change (``==PID== arbiter-count: refused code change: <what>``).
_CODE_CHANGE = re.compile(rb"^==\d+== arbiter-count: refused code change: ([^\n]*)$", re.MULTILINE)


#: The tool's line when it refuses a client request (``==PID== arbiter-count: refused client request 0x1102``).
_REFUSED = re.compile(rb"^==\d+== arbiter-count: refused client request (0x[0-9a-fA-F]+)", re.MULTILINE)


_SUMMARY = re.compile(rb"^==\d+== I\s+refs:\s+([\d,]+)\s*$")


def parse_cachegrind_log(log: bytes | None) -> int:
    """The total instruction count (``Ir``) from cachegrind's log: its **last** non-empty line must be the
    summary ``==PID== I   refs:      1,234,567``.

    Only the last line counts: the log is a pipe, so whatever a program manages to write into it (it can reopen
    valgrind's descriptor through ``/proc``) comes before valgrind's summary, which is written at exit after the
    program has stopped running. Raises ValueError naming what is wrong.
    """
    if not log:
        raise ValueError("valgrind wrote no log")
    lines = [ln for ln in log.splitlines() if ln.strip()]
    m = _SUMMARY.match(lines[-1]) if lines else None
    if m is None:
        raise ValueError(f"valgrind's log does not end with the cachegrind summary: {lines[-1][:120]!r}"
                         if lines else "valgrind's log is empty")
    return int(m.group(1).replace(b",", b""))


#: VEX's message for an instruction it cannot decode (amd64: "vex amd64->IR: unhandled instruction bytes: 0x62
#: 0xD2 ..."; other front ends: "disInstr(arm64): unhandled instruction 0x..."), and valgrind's core message that
#: follows it ("valgrind: Unrecognised instruction at address 0x...").
_UNHANDLED = re.compile(rb"unhandled instruction(?: bytes)?:?\s*((?:0x[0-9A-Fa-f]+\s*)*)")


_UNRECOGNISED = re.compile(rb"valgrind: Unrecognised instruction at address")


#: x86 legacy prefixes that may precede an EVEX-encoded instruction.
_LEGACY_PREFIXES = {0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}


def undecodable_instruction(log: bytes | None) -> tuple[str, str] | None:
    """``(reason, specifics)`` when valgrind's ``log`` says it met an instruction it cannot decode, else ``None``.

    Recognised: VEX's ``unhandled instruction bytes: 0x.. 0x..`` (any front end's ``unhandled instruction``) or
    valgrind's ``Unrecognised instruction at address``. ``reason`` is short and stable, e.g. ``"valgrind cannot
    decode the program's instructions (AVX-512)"`` when the bytes are an EVEX-encoded instruction (first opcode
    byte 0x62 after legacy prefixes: AVX-512 on amd64, where 0x62 ``BOUND`` does not exist); without recognisable
    bytes the parenthesis is left out. ``specifics`` names the bytes (e.g. ``"unhandled instruction bytes 0x62 0xD2
    0xFD 0x8"``). Only the log is read; whether the run also died of SIGILL and runs natively is the caller's
    business (:func:`count_instructions`)."""
    if not log:
        return None
    m = _UNHANDLED.search(log)
    if m is None and _UNRECOGNISED.search(log) is None:
        return None
    raw = m.group(1).split() if m is not None else []
    isa = ""
    try:
        values = [int(b, 16) for b in raw]
    except ValueError:
        values = []
    i = 0
    while i < len(values) and values[i] in _LEGACY_PREFIXES:
        i += 1
    amd64 = m is not None and b"amd64" in log[max(0, m.start() - 32):m.start()]
    if amd64 and i < len(values) and values[i] == 0x62:
        isa = "AVX-512"
    reason = "valgrind cannot decode the program's instructions" + (f" ({isa})" if isa else "")
    shown = b" ".join(raw[:8]).decode("ascii", "replace")
    specifics = (f"unhandled instruction bytes {shown}" if shown else "unrecognised instruction")
    return reason, specifics


def refused_client_request(log: bytes | None) -> str | None:
    """The request number (e.g. ``"0x1102"``) of the first client request the counting tool refused, from its
    ``log`` (``==PID== arbiter-count: refused client request 0x1102``), else ``None``.

    A program can write such a line into the log itself (it can reach the pipe), but only to have itself refused;
    it cannot remove the tool's line, which the tool writes right before it ends the run."""
    m = _REFUSED.search(log or b"")
    return m.group(1).decode() if m else None


def refused_code_change(log: bytes | None) -> str | None:
    """What the counting tool refused (e.g. ``"the program asked for memory that is writable and executable"``)
    from its ``log`` line ``==PID== arbiter-count: refused code change: <what>``, else ``None``. As with
    :func:`refused_client_request`, a program that writes such a line itself only gets itself refused."""
    return _refusal(_CODE_CHANGE, log)


def refused_meter_write(log: bytes | None) -> str | None:
    """What write the counting tool refused (e.g. ``"a store at 0x58123450"``) from its ``log`` line ``==PID==
    arbiter-count: refused write to the meter's memory: <what>``, else ``None``. A program that writes such a line
    itself only gets itself refused."""
    return _refusal(_METER_WRITE, log)


def _refusal(line: re.Pattern[bytes], log: bytes | None) -> str | None:
    """The text after the tool's refusal ``line`` in ``log``, else ``None``."""
    m = line.search(log or b"")
    return m.group(1).decode("utf-8", "replace").strip() if m else None


def meter_reason(detail: str) -> str:
    """The short reason of an ``unsupported_by_meter`` detail (its text before the first ``"; "``), e.g.
    ``"valgrind cannot decode the program's instructions (AVX-512)"``; ``detail`` itself when it has no ``"; "``."""
    return detail.split("; ", 1)[0]
