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
