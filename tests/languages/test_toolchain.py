"""The pinned toolchain fingerprint (issue 4): real probes of the installed g++, libc, binutils."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.languages.cpp.toolchain import (
    Toolchain,
    ToolchainMismatch,
    assert_comparable,
    comparable,
    probe_toolchain,
)

FLAGS = ("-std=gnu++17", "-O2", "-DONLINE_JUDGE")


def test_probe_reports_the_real_toolchain():
    tc = probe_toolchain("g++", FLAGS)
    version = subprocess.run(["g++", "-dumpfullversion"], capture_output=True, text=True).stdout.strip()
    machine = subprocess.run(["g++", "-dumpmachine"], capture_output=True, text=True).stdout.strip()
    assert version and version in tc.compiler_version
    assert tc.target == machine
    assert tc.compiler_path == os.path.realpath("/usr/bin/g++")
    glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]  # e.g. "2.36"
    assert glibc in tc.libc
    assert tc.libstdcxx.startswith("libstdc++.so.6")
    assert tc.binutils
    assert tc.link_mode == "dynamic" and tc.flags == FLAGS and tc.cpu == ""
    assert any(d.endswith("/c++/" + version.split(".")[0]) for d in tc.include_dirs)


def test_fingerprint_is_stable_and_json_round_trips():
    a = probe_toolchain("g++", FLAGS)
    b = probe_toolchain("g++", list(FLAGS))
    assert a.fingerprint == b.fingerprint and len(a.fingerprint) == 32
    d = json.loads(json.dumps(a.to_dict()))
    assert d["fingerprint"] == a.fingerprint and d["flags"] == list(FLAGS)
    assert set(d) >= {"compiler", "compiler_version", "target", "libc", "libstdcxx", "link_mode", "flags"}
    rebuilt = Toolchain(**{k: (tuple(v) if k == "flags" else v) for k, v in d.items()
                           if k not in ("fingerprint", "fingerprint_version")})
    assert rebuilt.fingerprint == a.fingerprint


def test_fingerprint_differs_with_flags_link_mode_and_native_cpu():
    base = probe_toolchain("g++", FLAGS)
    assert probe_toolchain("g++", ("-std=gnu++17", "-O3", "-DONLINE_JUDGE")).fingerprint != base.fingerprint
    assert probe_toolchain("g++", ("-std=gnu++17", "-O2")).fingerprint != base.fingerprint
    static = probe_toolchain("g++", (*FLAGS, "-static"))
    assert static.link_mode == "static" and static.fingerprint != base.fingerprint
    native = probe_toolchain("g++", (*FLAGS, "-march=native"))
    assert native.cpu and native.fingerprint != base.fingerprint
    assert base.base_fingerprint == static.base_fingerprint == native.base_fingerprint


def test_assert_comparable_refuses_different_toolchains():
    a = probe_toolchain("g++", FLAGS)
    assert_comparable(a, probe_toolchain("g++", FLAGS))
    assert_comparable(a.to_dict(), a)  # stored dicts (verdicts, result files) work too
    b = probe_toolchain("g++", (*FLAGS, "-static"))
    with pytest.raises(ToolchainMismatch) as info:
        assert_comparable(a, b)
    assert set(info.value.differences) == {"flags", "link_mode"}
    assert "not comparable" in str(info.value)
    other_libc = dict(a.to_dict(), libc="ldd (GNU libc) 2.31", fingerprint="0" * 32)
    with pytest.raises(ToolchainMismatch) as info:
        assert_comparable(a, other_libc)
    assert "libc" in info.value.differences
    with pytest.raises(ToolchainMismatch):
        assert_comparable(a, {k: v for k, v in a.to_dict().items() if k != "fingerprint"})
    assert comparable(a, a) and not comparable(a, b)


def test_every_compile_result_carries_the_fingerprint(tmp_path):
    from arbiter.languages.compile_cache import CompileCache

    cache = CompileCache(tmp_path)
    src = "#include <cstdio>\nint main(){puts(\"x\");}\n"
    r1 = compile_cpp(src, CompileSpec(None, 60), cache=cache)
    r2 = compile_cpp(src, CompileSpec(None, 60), cache=cache)  # from the cache
    r3 = compile_cpp("int main(){ oops }", CompileSpec(None, 60), cache=cache)  # CE
    assert r1.ok and r2.cached and not r3.ok
    for r in (r1, r2, r3):
        assert r.toolchain.fingerprint == probe_toolchain("g++", FLAGS).fingerprint
        assert r.toolchain.flags == r.flags == FLAGS
    seed = compile_cpp(src, CompileSpec("g++ -std=c++20 -O2 -pipe main.cpp -o main", 60), cache=cache)
    assert not comparable(seed.toolchain, r1.toolchain)
