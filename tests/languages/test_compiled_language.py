"""A new compiled language is one short declaration on the compiled-language base (issue 28): its
build steps, its output, how it runs, its own binds and limits. Two declared here, judged for
real through the registry: GNU C by gcc with the base's defaults, and a "shell" language whose
build checks the syntax and whose programs read a bound folder and get more memory."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.languages.base import BuildFailure, CompileSpec, FailureKind, SelfTest
from arbiter.languages.compile_cache import CompileCache
from arbiter.languages.compiled import CompiledLanguage
from arbiter.languages.registry import LANGUAGES
from arbiter.sandbox.limits import MiB, Limits

DOUBLE = TestSuite((StdioCase("a", b"21\n", (b"42\n",)), StdioCase("b", b"-4\n", (b"-8\n",))))


class GnuC(CompiledLanguage):
    name, suffixes = "test-gnu-c", (".c",)
    compiler, source_name = "/usr/bin/gcc", "main.c"
    self_test = SelfTest('#include <stdio.h>\nint main(void){puts("ok");}\n', b"", b"ok\n")

    def build_steps(self, spec):
        return [[self.compiler, "-O2", self.source_name, "-o", self.output]]


SHARED = Path(tempfile.mkdtemp(prefix="arbiter-test-lang-"))
(SHARED / "factor.txt").write_text("2\n")
SHARED.chmod(0o755)
(SHARED / "factor.txt").chmod(0o644)


class Shell(CompiledLanguage):
    name, suffixes = "test-shell", (".sh",)
    compiler, source_name = "/bin/sh", "main.sh"
    mounts = ((str(SHARED), "/opt/factor"),)  # its programs read /opt/factor/factor.txt
    self_test = SelfTest("echo ok\n", b"", b"ok\n")

    def build_steps(self, spec):
        return [[self.compiler, "-n", self.source_name], ["/bin/cp", self.source_name, self.output]]

    def run_argv(self, program, sandbox):
        return ["/bin/sh", f"{sandbox.prog_dir}/{program.entry}"]

    def run_limits(self, limits: Limits) -> Limits:  # (an interpreter's own memory on top)
        return limits.with_(memory_bytes=max(limits.memory_bytes, 128 * MiB))


@pytest.fixture(autouse=True)
def registered():
    LANGUAGES.update({GnuC.name: GnuC(), Shell.name: Shell()})
    yield
    for name in (GnuC.name, Shell.name):
        LANGUAGES.pop(name, None)


def test_a_declared_c_is_built_cached_and_judged(tmp_path):
    lang = LANGUAGES[GnuC.name]
    source = '#include <stdio.h>\nint main(void){long long n; scanf("%lld",&n); printf("%lld\\n", 2*n); return 0;}\n'
    cache = CompileCache(tmp_path / "cache")
    first = lang.build(source, CompileSpec(), cache=cache)
    assert not isinstance(first, BuildFailure) and first.files["main"].startswith(b"\x7fELF")
    assert lang.build(source, CompileSpec(), cache=cache).files == first.files  # (a cache hit)
    assert judge(Task(GnuC.name, source, DOUBLE)).outcome is Outcome.AC
    wrong = source.replace("2*n", "3*n")
    assert judge(Task(GnuC.name, wrong, DOUBLE)).outcome is Outcome.WA
    broken = lang.build("int main(void) { return x; }\n", CompileSpec(), cache=cache)
    assert isinstance(broken, BuildFailure) and broken.kind is FailureKind.COMPILE_ERROR
    assert "x" in broken.compile_output
    assert judge(Task(GnuC.name, "int main(void) { return x; }\n", DOUBLE)).outcome is Outcome.CE


def test_a_language_declares_its_binds_and_limits():
    hold = '/usr/bin/python3 -c "b = bytearray(48 << 20); b[::4096] = bytes(len(b[::4096]))"'
    source = f'read n; f=$(cat /opt/factor/factor.txt); {hold} && echo $((n * f))\n'
    v = judge(Task(Shell.name, source, DOUBLE, limits=Limits(memory_bytes=16 * MiB)))
    assert v.outcome is Outcome.AC, v.reason
    assert v.cases[0].memory_bytes > 48 * MiB  # (its run's limit: 128 MiB, not the task's 16)
    assert judge(Task(Shell.name, "read n; echo $((n * \n", DOUBLE)).outcome is Outcome.CE


def test_a_missing_compiler_is_ours_not_the_programs():
    class Missing(GnuC):
        compiler = "/usr/bin/no-such-compiler"

    built = Missing().build("int main(void){}\n", CompileSpec())
    assert isinstance(built, BuildFailure) and built.kind is FailureKind.ENVIRONMENT
