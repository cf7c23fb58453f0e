"""C++ compile (issue 4): command allowlist, sandboxed compile, compile bombs, PCH, compile cache,
-DONLINE_JUDGE. Every compile here is a real g++ run in the real sandbox."""

from __future__ import annotations

import ast
import json
import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from arbiter.languages.cpp import compile as cpp_mod
from arbiter.languages.compile_cache import CompileCache, compile_key
from arbiter.languages.cpp.compile import (
    MESSAGE_LIMIT,
    CompileCommandError,
    CompileSpec,
    compile_cpp,
    default_pch_store,
    pch_used,
)
from arbiter.languages.c import C as GCC_C
from arbiter.languages.cpp.command import parse_compile_command
from arbiter.languages.cpp.pch import PchStore, gch_lines, leading_std_headers, new_mount_point, plan_pch
from arbiter.languages.cpp.toolchain import ToolchainUnavailable, installed_compilers, probe_toolchain
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox

SEED_CMD = "g++ -std=c++20 -O2 -pipe main.cpp -o main"
BITS = "#include <bits/stdc++.h>\nusing namespace std;\nint main(){long long n;cin>>n;cout<<n*2<<'\\n';}\n"
SEED_HEADERS = ("iostream", "vector", "string", "unordered_set", "unordered_map", "climits", "algorithm")
SEED_LIKE = "".join(f"#include <{h}>\n" for h in SEED_HEADERS) + (
    "using namespace std;\nint main(){int n;cin>>n;vector<int>a(n);for(auto&x:a)cin>>x;"
    "sort(a.begin(),a.end());cout<<a.back()<<\"\\n\";}\n")
BOMB_MEMORY = 512 * MiB


def unique(src: str) -> str:
    """A source that no earlier run has cached (a comment with a fresh id)."""
    return f"// {uuid.uuid4().hex}\n{src}"


def run_binary(binary: bytes, stdin: bytes) -> bytes:
    with Sandbox(files={"main": binary}, limits=Limits(cpu_seconds=5)) as sb:
        ex = sb.run([f"{sb.prog_dir}/main"], stdin)
    assert ex.ok, (ex.status, ex.detail, ex.stderr[:500])
    return ex.stdout


@pytest.fixture
def cache(tmp_path) -> CompileCache:
    return CompileCache(tmp_path / "compile")


# ------------------------------------------------------------------------------------------
# command parsing
# ------------------------------------------------------------------------------------------

ACCEPT = [
    (SEED_CMD, "g++", ("-std=c++20", "-O2", "-pipe", "-DONLINE_JUDGE"), "main.cpp", "main"),
    ("g++-12 -O3 main.cpp", "g++-12", ("-O3", "-DONLINE_JUDGE"), "main.cpp", "a.out"),
    ("/usr/bin/g++ -std=gnu++17 -O2 -static -lm main.cpp -o main", "/usr/bin/g++",
     ("-std=gnu++17", "-O2", "-static", "-lm", "-DONLINE_JUDGE"), "main.cpp", "main"),
    ("clang++ -std=c++17 sol.cc -o sol", "clang++", ("-std=c++17", "-DONLINE_JUDGE"), "sol.cc", "sol"),
    ("c++ -DLOCAL=1 -D EVAL -UFOO main.cpp -omain", "c++", ("-DLOCAL=1", "-DEVAL", "-UFOO", "-DONLINE_JUDGE"),
     "main.cpp", "main"),
    ("g++ -Wall -Wextra -Wno-unused-result -fno-stack-protector -march=native -g -pthread main.cpp", "g++",
     ("-Wall", "-Wextra", "-Wno-unused-result", "-fno-stack-protector", "-march=native", "-g", "-pthread",
      "-DONLINE_JUDGE"), "main.cpp", "a.out"),
    ("g++ -O2 -std=c++17 -ftemplate-depth=2000 -fmax-errors=5 main.cpp -o main", "g++",
     ("-O2", "-std=c++17", "-ftemplate-depth=2000", "-fmax-errors=5", "-DONLINE_JUDGE"), "main.cpp", "main"),
    ("g++ -DONLINE_JUDGE -O2 main.cpp -o main", "g++", ("-DONLINE_JUDGE", "-O2"), "main.cpp", "main"),
    ("g++ -UONLINE_JUDGE -O2 main.cpp -o main", "g++", ("-UONLINE_JUDGE", "-O2"), "main.cpp", "main"),
    ("  g++   -O2\tmain.cpp  ", "g++", ("-O2", "-DONLINE_JUDGE"), "main.cpp", "a.out"),
    ("g++ code.cpp -o bin --std=c++17 -O3", "g++", ("--std=c++17", "-O3", "-DONLINE_JUDGE"), "code.cpp", "bin"),
    ("g++ -fdiagnostics-color=never main.cpp", "g++", ("-fdiagnostics-color=never", "-DONLINE_JUDGE"),
     "main.cpp", "a.out"),
]


@pytest.mark.parametrize("command,compiler,flags,source,output", ACCEPT)
def test_accepted_commands(command, compiler, flags, source, output):
    cmd = parse_compile_command(command)
    assert (cmd.compiler, cmd.flags, cmd.source_name, cmd.output_name) == (compiler, flags, source, output)


def test_default_command_and_online_judge_switch():
    assert parse_compile_command(None).flags == ("-std=gnu++17", "-O2", "-DONLINE_JUDGE")
    assert parse_compile_command("").flags == ("-std=gnu++17", "-O2", "-DONLINE_JUDGE")
    assert parse_compile_command(None, online_judge=False).flags == ("-std=gnu++17", "-O2")
    assert parse_compile_command(SEED_CMD, online_judge=False).flags == ("-std=c++20", "-O2", "-pipe")


REJECT = [
    ("gcc main.cpp", "gcc"),
    ("sh -c 'g++ main.cpp'", "sh"),
    ("python3 main.cpp", "python3"),
    ("/tmp/g++ main.cpp", "/tmp/g++"),
    ("g++ main.cpp -o /tmp/x", "/tmp/x"),
    ("g++ main.cpp -o ../main", "../main"),
    ("g++ main.cpp -o main -o main2", "main2"),
    ("g++ main.cpp -o main.cpp", "main.cpp"),
    ("g++ -I/etc main.cpp", "-I/etc"),
    ("g++ -I /etc main.cpp", "-I"),
    ("g++ -isystem /x main.cpp", "-isystem"),
    ("g++ -include /etc/shadow main.cpp", "-include"),
    ("g++ -L/tmp main.cpp", "-L/tmp"),
    ("g++ -B/tmp main.cpp", "-B/tmp"),
    ("g++ @args main.cpp", "@args"),
    ("g++ -wrapper /bin/sh main.cpp", "-wrapper"),
    ("g++ -fplugin=./x.so main.cpp", "-fplugin=./x.so"),
    ("g++ -specs=x main.cpp", "-specs=x"),
    ("g++ --sysroot=/ main.cpp", "--sysroot=/"),
    ("g++ -Wl,-T,script main.cpp", "-Wl,-T,script"),
    ("g++ -Xlinker -T main.cpp", "-Xlinker"),
    ("g++ main.cpp other.cpp", "other.cpp"),
    ("g++ /etc/passwd.cpp", "/etc/passwd.cpp"),
    ("g++ main.cpp x.o", "x.o"),
    ("g++ main.cpp; rm -rf /", "main.cpp;"),
    ("g++ $(cat /etc/shadow) main.cpp", "$(cat"),
    ("g++ main.cpp > out", ">"),
    ("g++ -c main.cpp", "-c"),
    ("g++ -S main.cpp", "-S"),
    ("g++ -x c main.cpp", "-x"),
    ("g++ -fsanitize=address main.cpp", "-fsanitize=address"),
    ("g++ -fprofile-generate main.cpp", "-fprofile-generate"),
    ("g++ -save-temps main.cpp", "-save-temps"),
    ("g++ -flto main.cpp", "-flto"),
    ("g++ -std=c++99 main.cpp", "-std=c++99"),
    ("g++ -D1X main.cpp", "-D1X"),
    ("g++ -frandom-thing main.cpp", "-frandom-thing"),
    ("g++ -v main.cpp", "-v"),
]


@pytest.mark.parametrize("command,token", REJECT)
def test_rejected_commands_name_the_token(command, token):
    with pytest.raises(CompileCommandError) as info:
        parse_compile_command(command)
    assert info.value.token == token
    assert repr(token) in str(info.value)


@pytest.mark.parametrize("command", ["g++ -O2", "g++ 'main.cpp", "   ", "g++ -o"])
def test_unusable_commands(command):
    if not command.strip():
        assert parse_compile_command(command).source_name == "main.cpp"  # blank = default
        return
    with pytest.raises(CompileCommandError):
        parse_compile_command(command)


def test_compile_cpp_refuses_a_bad_command_before_running_anything(cache):
    with pytest.raises(CompileCommandError, match="-include"):
        compile_cpp(BITS, CompileSpec("g++ -include /etc/shadow main.cpp -o main"), cache=cache)
    assert cache.entries() == []


def test_compile_spec_lives_below_the_judge():
    from arbiter.judge import task

    assert task.CompileSpec is CompileSpec
    with pytest.raises(ValueError):
        CompileSpec(timeout_seconds=0)


def test_a_missing_compiler_is_an_environment_error():
    if any(n.startswith("clang++") for n in installed_compilers()):
        pytest.skip("clang++ is installed here")
    with pytest.raises(ToolchainUnavailable, match="clang\\+\\+"):
        compile_cpp("int main(){}", CompileSpec("clang++ main.cpp -o main"), use_cache=False)


# ------------------------------------------------------------------------------------------
# compiling, CE messages
# ------------------------------------------------------------------------------------------

def test_compile_and_run(cache):
    r = compile_cpp(unique(BITS), CompileSpec(SEED_CMD, 60), cache=cache)
    assert r.ok and r.binary and not r.cached and not r.timed_out
    assert r.flags == ("-std=c++20", "-O2", "-pipe", "-DONLINE_JUDGE")
    assert r.toolchain.flags == r.flags
    assert r.command == "g++ -std=c++20 -O2 -pipe -DONLINE_JUDGE main.cpp -o main"
    assert run_binary(r.binary, b"21\n") == b"42\n"


def test_static_link(cache):
    r = compile_cpp(unique("#include <cstdio>\nint main(){puts(\"hi\");}\n"),
                    CompileSpec("g++ -O2 -static main.cpp -o main", 60), cache=cache)
    assert r.ok, r.message
    assert r.toolchain.link_mode == "static"
    assert b"/lib64/ld-linux" not in r.binary  # no dynamic loader requested
    assert run_binary(r.binary, b"") == b"hi\n"


def test_compile_error_message_and_it_is_cached(cache):
    src = unique("#include <cstdio>\nint main() {\n  retur 0;\n}\n")
    r = compile_cpp(src, CompileSpec(timeout_seconds=60), cache=cache)
    assert not r.ok and r.binary is None and not r.timed_out and not r.cached
    assert "main.cpp:4:3: error:" in r.message and "retur" in r.message  # line 1 is unique()'s comment
    again = compile_cpp(src, CompileSpec(timeout_seconds=60), cache=cache)
    assert again.cached and not again.ok and again.message == r.message


def test_long_compiler_output_keeps_head_and_tail(cache):
    body = "".join(f"  undeclared_{i} = {i};\n" for i in range(600))
    r = compile_cpp(unique("int main() {\n" + body + "}\n"), CompileSpec(timeout_seconds=120), cache=cache,
                    use_pch=False)
    assert not r.ok
    assert len(r.message) <= MESSAGE_LIMIT + 100
    assert "characters omitted" in r.message
    assert "undeclared_0" in r.message  # head
    assert "undeclared_599" in r.message  # tail


# ------------------------------------------------------------------------------------------
# compile bombs: each ends as a compile error or a compile time limit, inside the sandbox
# ------------------------------------------------------------------------------------------

BOMBS = {
    "etc_shadow": ('#include "/etc/shadow"\nint main(){}\n', "No such file"),
    "dev_zero": ('#include "/dev/zero"\nint main(){}\n', None),
    "dev_urandom": ('#include "/dev/urandom"\nint main(){}\n', None),
    "self_include": ('#include "main.cpp"\nint main(){}\n', "In file included from main.cpp:2,"),
    "template_recursion": ("template<int N> struct F { static const int v = F<N-1>::v + 1; };\n"
                           "template<> struct F<0> { static const int v = 0; };\n"
                           "int main() { return F<100000>::v; }\n", "template instantiation depth"),
    "template_explosion": ("template<int N, long M> struct E { static constexpr long v = "
                           "E<N-1, 2*M>::v + E<N-1, 2*M+1>::v; };\n"
                           "template<long M> struct E<0, M> { static constexpr long v = M; };\n"
                           "int main() { return (int)E<40, 1>::v; }\n", None),
    "huge_object": ("char big[1 << 30] = {1};\nint main() { return big[5]; }\n", "File size limit"),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_compile_bombs_end_as_compile_errors(name, cache):
    src, needle = BOMBS[name]
    timeout = 20.0
    t0 = time.monotonic()
    r = compile_cpp(unique(src), CompileSpec(timeout_seconds=timeout), memory_bytes=BOMB_MEMORY,
                    cache=cache, use_pch=False)
    elapsed = time.monotonic() - t0
    assert not r.ok and r.binary is None
    assert elapsed < timeout + 15, elapsed  # bounded by the compile limits, never hangs
    assert len(r.message) <= MESSAGE_LIMIT + 100
    if needle:
        assert needle in r.message, r.message[:2000]
    if name in ("dev_zero", "dev_urandom", "template_explosion"):
        assert r.timed_out or "memory limit" in r.message, r.message[:500]
    if name == "etc_shadow":
        assert "root:" not in r.message
    # the program's own errors are cached; limit-dependent outcomes (memory, file size, time) are not
    cacheable = name in ("etc_shadow", "self_include", "template_recursion")
    assert len(cache.entries()) == (1 if cacheable else 0)


def test_compile_time_limit_is_reported_and_not_cached(cache):
    src = unique(
        "constexpr long f() { long s = 0; for (long i = 0; i < 200000; i++) for (long j = 0; j < 200000; j++) "
        "s += i ^ j; return s; }\nconstexpr long x = f();\nint main() { return (int)x; }\n")
    # g++ gives up on its own after 2**25 constexpr operations (~3.8 s here: a race with the 3 s
    # limit); the raised ops limit keeps it compiling until the time limit
    spec = CompileSpec("g++ -std=gnu++17 -O2 -fconstexpr-ops-limit=4294967295 main.cpp -o main",
                       timeout_seconds=3)
    t0 = time.monotonic()
    r = compile_cpp(src, spec, cache=cache, memory_bytes=BOMB_MEMORY)
    assert time.monotonic() - t0 < 3 + 15
    assert not r.ok and r.timed_out and "compile time limit exceeded (3 s)" in r.message
    assert cache.entries() == []
    again = compile_cpp(src, spec, cache=cache, memory_bytes=BOMB_MEMORY)
    assert again.timed_out and not again.cached


def test_an_executable_over_the_cap_is_a_compile_error_and_never_cached(cache):
    """``.fill`` makes a huge executable in seconds (60,000,000 words: 240 MB, once a 240 MB cache
    entry and 495 MiB in the judge process; here just over the cap). CE naming the cap, nothing
    cached, nothing of it fetched."""
    words = cpp_mod.MAX_EXECUTABLE_BYTES // 4 + (1 << 18)  # 1 MiB over the cap
    src = unique(f'asm(".section .data\\n.fill {words}, 4, 0x01010101\\n.text");\nint main() {{ return 0; }}\n')
    r = compile_cpp(src, CompileSpec(timeout_seconds=60), cache=cache, use_pch=False)
    assert not r.ok and r.binary is None and not r.timed_out, r.message[:500]
    assert r.message.startswith("the executable is ") and "than the 64 MiB cap on executables" in r.message
    assert cache.entries() == []
    again = compile_cpp(src, CompileSpec(timeout_seconds=60), cache=cache, use_pch=False)
    assert not again.ok and not again.cached and again.message == r.message
    assert cache.entries() == []
    small = compile_cpp(unique('asm(".section .data\\n.fill 1000, 4, 1\\n.text");\nint main() { return 0; }\n'),
                        CompileSpec(timeout_seconds=60), cache=cache, use_pch=False)
    assert small.ok and len(cache.entries()) == 1


def test_the_cache_never_stores_an_executable_over_its_entry_cap(tmp_path):
    c = CompileCache(tmp_path / "c", max_entry_bytes=100_000)
    big, fits = (compile_key(f"src{i}".encode(), "main.cpp", ("-O2",), "fp") for i in range(2))
    c.put(big, ok=True, binary=b"x" * 100_001, message="", seconds=1.0)
    c.put(fits, ok=True, binary=b"y" * 100_000, message="", seconds=1.0)
    assert c.get(big) is None and c.get(fits).binary == b"y" * 100_000
    assert [p.name for p, _, _ in c.entries()] == [f"{fits}.entry"]


# ------------------------------------------------------------------------------------------
# precompiled headers
# ------------------------------------------------------------------------------------------

def test_leading_std_headers_and_plans():
    tc = probe_toolchain("g++", ("-O2",))
    assert leading_std_headers(SEED_LIKE) == SEED_HEADERS
    assert leading_std_headers("// c\n\n/* one */\n#include <vector>\n#  include<map> // x\nint a;\n#include <set>\n") == ("vector", "map")
    assert leading_std_headers("#define N 5\n#include <vector>\n") == ()
    assert leading_std_headers("#include <vector> // \\\n#include <map>\n") == ()
    assert leading_std_headers('#include "local.h"\n#include <vector>\n') == ()
    assert leading_std_headers("#include <cassert>\n#include <vector>\n") == ()
    assert leading_std_headers("/* a */ int x; /* b */\n#include <vector>\n") == ()
    assert leading_std_headers("#include <ext/pb_ds/assoc_container.hpp>\n") == ()
    assert plan_pch(BITS, ("-O2",), tc).kind == "stdcxx"
    assert plan_pch('#pragma GCC optimize("O3")\n#include <bits/stdc++.h>\n', ("-O2",), tc).kind == "stdcxx"
    assert plan_pch(SEED_LIKE, ("-O2",), tc).headers == SEED_HEADERS
    assert plan_pch("#include <cstdio>\n#include <cstring>\nint main(){}\n", ("-O2",), tc) is None
    assert plan_pch("int main(){}\n", ("-O2",), tc) is None
    # keyed by flags; link-only flags do not matter
    a = plan_pch(BITS, ("-O2",), tc)
    assert plan_pch(BITS, ("-O0",), tc).key != a.key
    assert plan_pch(BITS, ("-O2", "-static", "-lm", "-pipe"), tc).key == a.key
    assert plan_pch(BITS, ("-O2", "-DONLINE_JUDGE"), tc).key != a.key


@pytest.mark.parametrize("source,spec,kind", [
    (BITS, CompileSpec(None, 120), "stdcxx"),
    (BITS, CompileSpec(SEED_CMD, 120), "stdcxx"),
    (SEED_LIKE, CompileSpec(SEED_CMD, 120), "prefix"),
])
def test_pch_is_used_by_gcc(source, spec, kind):
    """g++ -H prints ``! /pch/....gch`` when it loads the precompiled header."""
    store = default_pch_store()
    cmd = parse_compile_command(spec.command)
    plan = plan_pch(source, cmd.flags, probe_toolchain(cmd.compiler, cmd.flags))
    assert plan.kind == kind
    for _ in range(3):  # a prefix PCH is built the second time its prefix is seen
        if store.ensure(plan, probe_toolchain(cmd.compiler, cmd.flags)) is not None:
            break
    r = compile_cpp(source, spec, use_cache=False, extra_args=("-H",))
    assert r.ok and r.pch == kind, r.message[:2000]
    assert pch_used(r.message), r.message[:2000]


def test_pch_for_other_flags_is_silently_ignored_so_each_flag_set_gets_its_own():
    """The reason PCHs are keyed by flags: an -O2 PCH offered to an -O0 compile is skipped by g++
    (``x`` in -H output, no error). compile_cpp with -O0 uses its own -O0 PCH."""
    o2 = CompileSpec("g++ -std=gnu++17 -O2 main.cpp -o main", 120)
    o0 = CompileSpec("g++ -std=gnu++17 -O0 main.cpp -o main", 120)
    store = default_pch_store()
    c2 = parse_compile_command(o2.command)
    tc2 = probe_toolchain(c2.compiler, c2.flags)
    plan2 = plan_pch(BITS, c2.flags, tc2)
    d2 = store.ensure(plan2, tc2)
    assert d2 is not None
    c0 = parse_compile_command(o0.command)
    mount = new_mount_point()
    with Sandbox(mounts=[(str(d2), mount)], limits=cpp_mod.compile_limits(120)) as sb:
        sb.put("main.cpp", BITS.encode())
        ex = sb.run([tc2.exec_path, *c0.flags, *plan2.compile_args(mount), "-H", "main.cpp", "-o", "main"],
                    limits=cpp_mod.compile_limits(120))
    assert ex.ok, ex.stderr[-2000:]
    used, rejected = gch_lines(ex.stderr.decode())
    assert used == [] and len(rejected) == 1 and rejected[0].startswith(f"{mount}/bits/stdc++.h.gch/")
    r0 = compile_cpp(BITS, o0, use_cache=False, extra_args=("-H",))
    assert r0.ok and pch_used(r0.message)
    assert plan_pch(BITS, c0.flags, probe_toolchain(c0.compiler, c0.flags)).key != plan2.key


def test_pch_is_not_used_when_the_program_defines_macros_first_and_still_compiles_right():
    src = "#define _GLIBCXX_DEBUG\n" + BITS
    r = compile_cpp(src, CompileSpec(None, 120), use_cache=False, extra_args=("-H",))
    assert r.ok and r.pch == "stdcxx" and not pch_used(r.message)
    assert run_binary(r.binary, b"5\n") == b"10\n"


@pytest.mark.parametrize("source,command", [(BITS, None), (SEED_LIKE, SEED_CMD)])
def test_pch_does_not_change_the_executable(source, command):
    spec = CompileSpec(command, 120)
    with_pch = compile_cpp(source, spec, use_cache=False)
    without = compile_cpp(source, spec, use_cache=False, use_pch=False)
    assert with_pch.ok and without.ok and with_pch.pch and not without.pch
    assert with_pch.binary == without.binary


#: True (prints 1) when the program's compile can name any file of the PCH store.
SEES_THE_STORE = """\
#if __has_include(</pch/prefix.h>) || __has_include(</pch/prefix.h.gch>) || __has_include(</pch/meta.json>) \\
    || __has_include(</pch/bits/stdc++.h.gch>) || __has_include(<meta.json>) || __has_include(<prefix.h>) \\
    || __has_include(<prefix.h.gch>) || __has_include(<bits/stdc++.h.gch>) || __has_include("meta.json")
#define SEES 1
#else
#define SEES 0
#endif
int main() { std::cout << SEES << "\\n"; }
"""


@pytest.mark.parametrize("head", ["#include <bits/stdc++.h>\n", "#include <iostream>\n#include <vector>\n"],
                         ids=["stdcxx", "prefix"])
def test_programs_cannot_see_the_pch_store(head, tmp_path):
    """``__has_include(</pch/prefix.h>)`` was false the first time a header list was compiled and
    true after, and ``#include <meta.json>`` worked under ``-I/pch``: the store leaked whether
    another submission used those headers. Now nothing of it can be named, with or without a
    built PCH (each state checked: -H shows whether the PCH was used)."""
    root = Path(tempfile.mkdtemp(prefix="arbiter-test-pch-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    os.chmod(root, 0o755)
    try:
        store = PchStore(root)
        spec = CompileSpec("g++ -std=gnu++17 -O1 main.cpp -o main", 120)
        used = []
        for _ in range(3):  # a prefix PCH is built at the second sighting, a stdcxx one at the first
            r = compile_cpp(head + SEES_THE_STORE, spec, use_cache=False, pch_store=store, extra_args=("-H",))
            assert r.ok, r.message[-2000:]
            used.append(pch_used(r.message))
            assert run_binary(r.binary, b"") == b"0\n"
            meta = compile_cpp(head + "#include <meta.json>\n" + SEES_THE_STORE, spec, use_cache=False,
                               pch_store=store)
            assert not meta.ok and "meta.json: No such file or directory" in meta.message, meta.message[-500:]
        bare = compile_cpp(head + SEES_THE_STORE, spec, use_cache=False, use_pch=False)
        assert bare.ok and run_binary(bare.binary, b"") == b"0\n"
        assert used[-1] and store.lookup(plan_pch(head, spec_flags(spec), tc_of(spec))) is not None
    finally:
        shutil.rmtree(root, ignore_errors=True)


#: What a compile can tell of its sandbox: whether ``/pch`` (where a PCH is shown) exists.
SANDBOX_BITS = """\
#if __has_include("/pch/../usr/include/stdio.h")
#define PCH_DIR 1
#else
#define PCH_DIR 0
#endif
#if __has_include(</pch/../usr/include/stdio.h>)
#define PCH_DIR_SYS 1
#else
#define PCH_DIR_SYS 0
#endif
int main(void) { printf("%d %d\\n", PCH_DIR, PCH_DIR_SYS); return 0; }
"""


def test_every_compile_sandbox_looks_the_same():
    """``/pch`` existed only in compiles offered a PCH: ``__has_include("/pch/../usr/...")`` told a
    program whether an earlier submission had used its headers (issue 28, finding 4). Now a
    compile with a PCH, one without, and a C compile (no PCH at all) see the same."""
    spec = CompileSpec("g++ -std=gnu++17 -O2 main.cpp -o main", 120)
    with_pch = compile_cpp("#include <bits/stdc++.h>\n" + SANDBOX_BITS, spec, use_cache=False, extra_args=("-H",))
    assert with_pch.ok and pch_used(with_pch.message), with_pch.message[-2000:]
    without = compile_cpp("#include <bits/stdc++.h>\n" + SANDBOX_BITS, spec, use_cache=False, use_pch=False)
    c = GCC_C.build("#include <stdio.h>\n" + SANDBOX_BITS, CompileSpec("gcc -O2 main.c -o main", 120))
    outputs = {run_binary(r.binary if hasattr(r, "binary") else r.files["main"], b"") for r in (with_pch, without, c)}
    assert len(outputs) == 1, outputs


def spec_flags(spec: CompileSpec) -> tuple[str, ...]:
    return parse_compile_command(spec.command).flags


def tc_of(spec: CompileSpec):
    cmd = parse_compile_command(spec.command)
    return probe_toolchain(cmd.compiler, cmd.flags)


def test_concurrent_pch_builders_build_once():
    root = Path(tempfile.mkdtemp(prefix="arbiter-test-pch-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    os.chmod(root, 0o755)
    try:
        store = PchStore(root)
        tc = probe_toolchain("g++", ("-std=gnu++17", "-O1"))
        plan = plan_pch("#include <vector>\n#include <string>\nint main(){}\n", tc.flags, tc)
        assert plan.kind == "prefix"
        assert store.ensure(plan, tc) is None  # first sighting: not worth a build yet
        results: list = []
        builds: list = []

        def worker():
            s = PchStore(root)
            results.append(s.ensure(plan, tc))
            builds.append(s.last_build_seconds)

        threads = [threading.Thread(target=worker) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        built = [b for b in builds if b > 0]
        assert len(built) == 1  # one builder; the others went on without waiting
        assert store.lookup(plan) is not None
        assert [p for p in root.iterdir() if len(p.name) == 32] == [store.entry_dir(plan)]
        assert not [p for p in root.iterdir() if p.name.startswith(".build-")]
        meta = json.loads((store.entry_dir(plan) / "meta.json").read_text())
        assert meta["headers"] == ["vector", "string"] and meta["flags"] == ["-std=gnu++17", "-O1"]
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------------------------------------
# compile cache
# ------------------------------------------------------------------------------------------

def test_cache_hit_returns_identical_bytes(cache):
    src = unique(BITS)
    first = compile_cpp(src, CompileSpec(SEED_CMD, 60), cache=cache)
    second = compile_cpp(src, CompileSpec(SEED_CMD, 60), cache=cache)
    assert first.ok and not first.cached
    assert second.ok and second.cached
    assert second.binary == first.binary
    assert second.toolchain.fingerprint == first.toolchain.fingerprint and second.flags == first.flags
    assert len(cache.entries()) == 1


def test_cache_key_covers_flags_and_online_judge(cache):
    src = unique(BITS)
    a = compile_cpp(src, CompileSpec(None, 60), cache=cache)
    b = compile_cpp(src, CompileSpec(None, 60, online_judge=False), cache=cache)
    c = compile_cpp(src, CompileSpec("g++ -std=gnu++17 -O1 main.cpp -o main", 60), cache=cache)
    assert not a.cached and not b.cached and not c.cached
    assert len(cache.entries()) == 3
    assert compile_cpp(src, CompileSpec(None, 60, online_judge=False), cache=cache).cached


def test_concurrent_compiles_of_one_source_make_one_entry(cache):
    src = unique(BITS)
    spec = CompileSpec(None, 120)
    results = []
    errors = []

    def worker():
        try:
            results.append(compile_cpp(src, spec, cache=cache))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 4 and all(r.ok for r in results)
    assert len({r.binary for r in results}) == 1
    assert sum(not r.cached for r in results) == 1  # single flight: compiled once
    assert len(cache.entries()) == 1


def test_concurrent_compiles_from_several_processes_make_one_entry(cache):
    import subprocess
    import sys

    src = unique(BITS)
    code = (
        "import sys, json\n"
        "from arbiter.languages.compile_cache import CompileCache\n"
        "from arbiter.languages.cpp.compile import CompileSpec, compile_cpp\n"
        "r = compile_cpp(sys.stdin.read(), CompileSpec(None, 120), cache=CompileCache(sys.argv[1]))\n"
        "import hashlib\n"
        "print(json.dumps([r.ok, r.cached, hashlib.sha256(r.binary or b'').hexdigest()]))\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(cache.root)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [json.loads(p.communicate(src, timeout=300)[0]) for p in procs]
    assert all(ok for ok, _, _ in outs)
    assert len({digest for _, _, digest in outs}) == 1
    assert sum(not cached for _, cached, _ in outs) == 1
    assert len(cache.entries()) == 1


def test_corrupt_or_torn_entries_are_misses(cache):
    src = unique(BITS)
    spec = CompileSpec(None, 60)
    good = compile_cpp(src, spec, cache=cache)
    (path, size, _), = cache.entries()
    data = path.read_bytes()
    path.write_bytes(data[: size // 2])  # torn
    r = compile_cpp(src, spec, cache=cache)
    assert not r.cached and r.binary == good.binary
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF  # flipped byte in the executable
    path.write_bytes(bytes(data))
    r = compile_cpp(src, spec, cache=cache)
    assert not r.cached and r.binary == good.binary
    assert compile_cpp(src, spec, cache=cache).cached


def test_cache_evicts_least_recently_used(tmp_path):
    c = CompileCache(tmp_path / "c", max_bytes=3 * 100_000)
    keys = [compile_key(f"src{i}".encode(), "main.cpp", ("-O2",), "fp") for i in range(5)]
    for i, k in enumerate(keys[:3]):
        c.put(k, ok=True, binary=bytes([i]) * 90_000, message="", seconds=1.0)
        os.utime(c.path(k), (1000 + i, 1000 + i))
    assert c.get(keys[0]) is not None  # touch: now the most recently used
    c.put(keys[3], ok=True, binary=b"x" * 90_000, message="", seconds=1.0)
    assert c.total_bytes() <= c.max_bytes
    assert c.get(keys[0]) is not None and c.get(keys[3]) is not None
    assert c.get(keys[1]) is None  # the oldest untouched one went first


# ------------------------------------------------------------------------------------------
# -DONLINE_JUDGE (realdata/SOURCES.md: CodeScope row 83 prints nothing without it)
# ------------------------------------------------------------------------------------------

def test_online_judge_macro_changes_codescope_row_83(shared, cache):
    rows = [json.loads(line) for line in
            (shared / "realdata" / "codescope_codeopt" / "code_optimization_data.jsonl").open()]
    row = next(r for r in rows if str(r["id"]) == "83")
    assert row["lang"] == "GNU C++"
    first = ast.literal_eval(row["testcases"])[0]
    stdin, expected = first["input"].encode(), first["output"][0]
    for field in ("time_baseline_source_code", "memory_baseline_source_code"):
        with_oj = compile_cpp(row[field], CompileSpec(None, 60), cache=cache)
        without = compile_cpp(row[field], CompileSpec(None, 60, online_judge=False), cache=cache)
        assert with_oj.ok and without.ok, (with_oj.message, without.message)
        assert "-DONLINE_JUDGE" in with_oj.flags and "-DONLINE_JUDGE" not in without.flags
        out_with = run_binary(with_oj.binary, stdin)
        out_without = run_binary(without.binary, stdin)
        assert out_with.decode().split() == expected.split()
        assert out_without == b""  # reads input.txt / writes output.txt instead
        assert out_with != out_without
