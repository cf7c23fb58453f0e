"""Loading a Python program in the forker (sandbox.guest.loader): the compile check and the warm
forker are one fork. A load that fails says what the compiler said and leaves the sandbox as good
as new; a load that succeeds leaves no limit of the load on the cases."""

from __future__ import annotations

from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox

LIMITS = Limits(cpu_seconds=2, wall_seconds=5)
ECHO = "print(input())\n"
RLIMITS = ("import resource\n"
           "print(*(resource.getrlimit(getattr(resource, 'RLIMIT_' + n)) for n in ('CPU', 'NOFILE', 'FSIZE')))\n")


def echo_works(sb: Sandbox) -> None:
    assert sb.load_python(ECHO) is None
    run = sb.run_python(b"hello\n")
    assert run.status == Status.OK and run.stdout == b"hello\n"


def test_syntax_error_is_the_compilers_message_and_the_sandbox_goes_on():
    with Sandbox(limits=LIMITS) as sb:
        error = sb.load_python("def f(:\n    pass\n")
        assert error is not None and "SyntaxError" in error and sb.load_stage == "program"
        echo_works(sb)
        assert sb.stray_processes() == []


def test_a_compile_that_blows_the_compilers_stack_is_reported_not_fatal():
    with Sandbox(limits=LIMITS) as sb:
        error = sb.load_python("x = " + "-" * 200_000 + "1\n")
        assert error is not None and ("RecursionError" in error or "MemoryError" in error
                                      or "too many" in error), error
        assert sb.load_stage == "program"
        echo_works(sb)


def test_a_prelude_that_raises_is_stage_prelude():
    with Sandbox(limits=LIMITS) as sb:
        error = sb.load_python(ECHO, prelude="raise ValueError('no such preamble')\n")
        assert error is not None and "no such preamble" in error and sb.load_stage == "prelude"
        echo_works(sb)


def test_the_loads_limits_do_not_reach_the_cases():
    """The forker compiled under the load's soft limits (10 CPU s); each case runs under its own."""
    with Sandbox(limits=LIMITS) as sb:
        assert sb.load_python(RLIMITS) is None
        first = sb.run_python(b"")
        with Sandbox(limits=LIMITS) as other:  # cases forked by the server itself, no forker load
            other.run(["/bin/true"])
            assert other.load_python(RLIMITS) is None
            other.run(["/bin/true"])  # a native run drops the forker: the next is forked anew
            again = other.run_python(b"")
    assert first.status == Status.OK and again.status == Status.OK
    assert first.stdout == again.stdout
    assert first.stdout.startswith(b"(3, 4)")  # ceil(2 CPU s) + 1, +1 hard: the case's own


def test_prelude_and_program_after_a_native_run():
    """After a native run the forker is forked again from the server's own copy of the program:
    the same prelude, the same __main__."""
    with Sandbox(limits=LIMITS) as sb:
        assert sb.load_python("print(GREETING, __name__)\n", prelude="GREETING = 'hi'\n") is None
        before = sb.run_python(b"")
        assert sb.run(["/bin/true"]).status == Status.OK
        after = sb.run_python(b"")
    assert before.stdout == after.stdout == b"hi __main__\n"


def test_a_loader_ended_from_outside_is_a_sandbox_error_never_a_compile_error():
    """The forker loading the program is ended mid-compile by a signal the compiler cannot send
    (SIGTERM: another process): that is arbiter's failure (SandboxError: the judge retries), not
    the program's CE (it was, as "the program could not be compiled")."""
    import os
    import signal
    import threading
    import time

    import pytest

    from arbiter.sandbox.errors import SandboxError
    from arbiter.sandbox.session import child_pids

    limits = Limits(cpu_seconds=4)
    with Sandbox(limits=limits) as sb:
        assert sb.load_python("print(1)") is None
        sb.end_session()
        sb.new_session(limits=limits, python=True)
        forkers: list[int] = []
        for _ in range(500):  # (the blank forker, forked a moment after: it will load the program)
            forkers = child_pids(sb.session.armed_pid)
            if forkers:
                break
            time.sleep(0.01)
        assert len(forkers) == 1, forkers
        timer = threading.Timer(0.2, os.kill, (forkers[0], signal.SIGTERM))
        timer.start()
        try:
            with pytest.raises(SandboxError, match="loader ended before it loaded"):
                sb.load_python("x = 1\n" * 400_000)  # (seconds of compiling)
        finally:
            timer.cancel()


def test_whose_failure_a_failed_load_is():
    from arbiter.sandbox.guest.program import COMPILE_FAILED, PRELUDE_FAILED, SYNTAX, failed_load_stage

    assert [failed_load_stage(code, None) for code in (SYNTAX, COMPILE_FAILED, PRELUDE_FAILED)] == \
        ["program", "program", "prelude"]
    assert [failed_load_stage(None, sig) for sig in (9, 11, 6, 24)] == ["program"] * 4
    # an end the compiler cannot cause: no program received (0), an uncaught exception in
    # arbiter's loader (1), a signal from another process
    assert [failed_load_stage(0, None), failed_load_stage(1, None), failed_load_stage(None, 15),
            failed_load_stage(None, None)] == ["sandbox"] * 4
