"""The pinned toolchain fingerprint: what built a binary, so measurements can be compared.

:func:`probe_toolchain` runs the trusted system compiler on the host with fixed arguments, once
per installed compiler (kept in the cache folder, keyed by the files it read); :func:`assert_comparable` refuses to compare measurements whose
fingerprints differ. See ``docs/languages.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any, Mapping

#: Bumped when the meaning of a fingerprint field changes (old fingerprints stop matching).
FINGERPRINT_VERSION = 1
#: Where the sandbox sees compilers (it binds /usr read-only; /bin is a symlink to /usr/bin here).
COMPILER_DIRS = ("/usr/bin", "/usr/local/bin")


class ToolchainUnavailable(RuntimeError):
    """The compiler a task asks for is not installed on this machine (e.g. ``clang++`` or
    ``g++-13`` where only g++ 12 exists). Not the program's fault and not a measurement: the
    caller reports it (the judge as ``SANDBOX_ERROR``-like environment failure) or installs it."""


class ToolchainMismatch(ValueError):
    """Two measurements were made with different toolchains and must not be compared (PIE card:
    timings from different toolchains are not comparable). ``differences`` maps each differing
    field to ``(a_value, b_value)``."""

    def __init__(self, message: str, differences: Mapping[str, tuple[Any, Any]]):
        super().__init__(message)
        self.differences = dict(differences)


@dataclass(frozen=True)
class Toolchain:
    """A C++ toolchain plus the flags it was invoked with.

    - ``compiler``: the driver the task named (``g++``); ``compiler_path``: its resolved real path
      (``/usr/bin/x86_64-linux-gnu-g++-12``).
    - ``compiler_version``: the first line of ``--version`` (``g++ (Debian 12.2.0-14+deb12u1)
      12.2.0``), which carries the distribution patch level.
    - ``target``: ``-dumpmachine`` (``x86_64-linux-gnu``).
    - ``binutils``: the first line of ``as --version``.
    - ``libc``: ``ldd --version`` first line (``ldd (Debian GLIBC 2.36-9+deb12u14) 2.36``), else
      ``os.confstr("CS_GNU_LIBC_VERSION")``.
    - ``libstdcxx``: the real file name of the libstdc++ the binary runs against
      (``libstdc++.so.6.0.30``).
    - ``link_mode``: ``static`` when the flags contain ``-static``, else ``dynamic``.
    - ``flags``: the effective compile flags (:class:`~arbiter.languages.cpp.command.CompileCommand`).
    - ``cpu``: the host CPU model, only when the flags contain ``-march=native``/``-mtune=native``
      (the code then depends on the machine); else empty.
    - ``include_dirs``: the compiler's system include search list (not part of the fingerprint;
      used to find ``bits/stdc++.h``).
    - ``exec_path``: the path to execute (``/usr/bin/g++``; not part of the fingerprint). Not the
      real path: clang decides C or C++ mode from the name it is run as.
    """

    compiler: str
    compiler_path: str
    compiler_version: str
    target: str
    binutils: str
    libc: str
    libstdcxx: str
    link_mode: str
    flags: tuple[str, ...]
    cpu: str = ""
    include_dirs: tuple[str, ...] = field(default=(), compare=False)
    exec_path: str = field(default="", compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The fingerprinted fields plus ``fingerprint`` and ``fingerprint_version``, JSON-ready
        (``flags`` as a list)."""
        d = self._fields()
        d["fingerprint"] = self.fingerprint
        d["fingerprint_version"] = FINGERPRINT_VERSION
        return d

    def _fields(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("include_dirs")
        d.pop("exec_path")
        d["flags"] = list(self.flags)
        return d

    @cached_property
    def fingerprint(self) -> str:
        """A stable hex digest (32 chars) of every field but ``include_dirs``/``exec_path``: equal fingerprints
        mean the same compiler, libraries, link mode and flags. (Computed once: every build
        of a compile-cache hit reads it.)"""
        raw = json.dumps([FINGERPRINT_VERSION, self._fields()], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(raw.encode()).hexdigest()[:32]

    @property
    def base_fingerprint(self) -> str:
        """The fingerprint without ``flags``/``link_mode``/``cpu``: identifies the installed
        toolchain alone (used to key precompiled headers together with their own flag set)."""
        d = self._fields()
        for k in ("flags", "link_mode", "cpu"):
            d.pop(k)
        raw = json.dumps([FINGERPRINT_VERSION, d], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(raw.encode()).hexdigest()[:32]

    def with_flags(self, flags: tuple[str, ...]) -> "Toolchain":
        """The same installed toolchain with other flags (link mode and CPU follow the flags)."""
        return replace(self, flags=tuple(flags), link_mode=_link_mode(flags),
                       cpu=_cpu_model() if _wants_native(flags) else "")


def _first_line(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                             env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return ""
    text = (out.stdout or out.stderr or "").strip()
    return text.splitlines()[0].strip() if text else ""


def _link_mode(flags: tuple[str, ...]) -> str:
    return "static" if "-static" in flags else "dynamic"


def _wants_native(flags: tuple[str, ...]) -> bool:
    return any(f in ("-march=native", "-mtune=native") for f in flags)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def resolve_compiler(name: str) -> str:
    """The absolute path of the compiler driver ``name`` as the sandbox will run it.

    ``name`` is a bare driver name (``g++``) or an absolute path under ``/usr/bin`` or
    ``/usr/local/bin`` (already checked by the command parser). Raises
    :class:`ToolchainUnavailable` when it is not installed.
    """
    if name.startswith("/"):
        candidates = [name]
    else:
        candidates = [os.path.join(d, name) for d in COMPILER_DIRS]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise ToolchainUnavailable(
        f"the compiler {name!r} is not installed here (looked in {', '.join(COMPILER_DIRS)}); "
        f"installed: {', '.join(installed_compilers()) or 'none'}")


def installed_compilers() -> list[str]:
    """The C++ drivers present in :data:`COMPILER_DIRS` (``g++``, ``g++-12``, ``clang++``...)."""
    found = []
    pat = re.compile(r"^(?:g\+\+|c\+\+|clang\+\+)(?:-\d+(?:\.\d+)*)?$")
    for d in COMPILER_DIRS:
        try:
            found += sorted(n for n in os.listdir(d) if pat.match(n))
        except OSError:
            continue
    return found


_probe_lock = threading.Lock()
_probe_cache: dict[tuple[str, str, int, int], Toolchain] = {}


def probe_toolchain(compiler: str = "g++", flags: tuple[str, ...] | list[str] = ()) -> Toolchain:
    """The :class:`Toolchain` for ``compiler`` (a driver name or path) used with ``flags``.

    Probes once per (driver, real path, size, mtime) per process (from the cache folder when an
    earlier process probed the same installed files), then only swaps the flags, so a call costs
    microseconds. Raises :class:`ToolchainUnavailable` when the driver is missing.
    """
    path = resolve_compiler(compiler)
    real = os.path.realpath(path)
    st = os.stat(real)
    key = (compiler, real, st.st_size, int(st.st_mtime))
    with _probe_lock:
        base = _probe_cache.get(key)
        if base is None:
            base = _stored_probe(compiler, path, real)
            _probe_cache[key] = base
    return base.with_flags(tuple(flags))


def _stamp(path: str | None) -> list[Any] | None:
    """What identifies an installed file: its real path, size, mtime, ctime and inode (a
    reinstall or an upgrade changes the ctime and the inode even when it keeps the mtime)."""
    if not path:
        return None
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return [real]
    return [real, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _stored_probe(compiler: str, path: str, real: str) -> Toolchain:
    """:func:`_probe`, stored in the cache folder (``toolchain/<key>.json``) so a new process
    does not rerun the compiler: keyed by the stamps (:func:`_stamp`) of every file the probe
    reads (the driver, ``as``, ``ldd``, the libstdc++ it names) and the running glibc. A missing,
    unreadable or stale entry is probed again."""
    from arbiter.languages.compile_cache import atomic_write, cache_root

    try:
        libc_now = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        libc_now = ""
    raw = json.dumps([FINGERPRINT_VERSION, compiler, path, _stamp(real), _stamp(shutil.which("as")),
                      _stamp(shutil.which("ldd")), libc_now])
    file = cache_root() / "toolchain" / f"{hashlib.sha256(raw.encode()).hexdigest()[:32]}.json"
    try:
        entry = json.loads(file.read_text(encoding="utf-8"))
        if entry["lib"] == _stamp(entry["lib_path"]):
            fields = entry["toolchain"]
            return Toolchain(**dict(fields, flags=tuple(fields["flags"]),
                                    include_dirs=tuple(fields["include_dirs"])))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    tc, lib = _probe(compiler, path, real)
    try:
        atomic_write(file, [json.dumps({"toolchain": asdict(tc), "lib_path": lib, "lib": _stamp(lib)}).encode()])
    except OSError:
        pass  # a read-only cache folder: probe again next time
    return tc


def _probe(compiler: str, path: str, real: str) -> tuple[Toolchain, str]:
    """Run the compiler and the tools: the toolchain, and the libstdc++ file it links (or "")."""
    version = _first_line([path, "--version"])
    target = _first_line([path, "-dumpmachine"])
    libstdcxx = ""
    lib = _first_line([path, "-print-file-name=libstdc++.so.6"])
    if lib and os.path.exists(lib):
        libstdcxx = os.path.basename(os.path.realpath(lib))
    libc = _first_line(["ldd", "--version"]) if shutil.which("ldd") else ""
    if not libc:
        try:
            libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
        except (ValueError, OSError):
            libc = ""
    binutils = _first_line(["as", "--version"]) if shutil.which("as") else ""
    include_dirs: list[str] = []
    try:
        out = subprocess.run([path, "-x", "c++", "-E", "-v", "-"], input="", capture_output=True,
                             text=True, timeout=30, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
        inside = False
        for line in out.stderr.splitlines():
            if line.startswith("#include <...> search starts here"):
                inside = True
            elif line.startswith("End of search list"):
                break
            elif inside and line.startswith(" "):
                include_dirs.append(os.path.normpath(line.strip()))
    except (OSError, subprocess.SubprocessError):
        pass
    return Toolchain(compiler=compiler, compiler_path=real, compiler_version=version, target=target,
                     binutils=binutils, libc=libc, libstdcxx=libstdcxx, link_mode="dynamic",
                     flags=(), include_dirs=tuple(include_dirs), exec_path=path), lib if libstdcxx else ""


def find_system_header(tc: Toolchain, name: str) -> str | None:
    """The path of system header ``name`` (e.g. ``bits/stdc++.h``) in ``tc``'s search list."""
    for d in tc.include_dirs:
        p = os.path.join(d, name)
        if os.path.isfile(p):
            return p
    return None


def _as_dict(t: Toolchain | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(t, Toolchain):
        return t.to_dict()
    return dict(t)


def assert_comparable(a: Toolchain | Mapping[str, Any], b: Toolchain | Mapping[str, Any]) -> None:
    """Refuse to compare measurements made with different toolchains.

    ``a`` / ``b`` are :class:`Toolchain` objects or their :meth:`Toolchain.to_dict` form (as
    stored in a verdict or a results file). Raises :class:`ToolchainMismatch` listing every
    differing field when the fingerprints differ (or either is missing); returns ``None`` when
    they are equal. Source: PIE card ("timings from different toolchains are not comparable").
    """
    da, db = _as_dict(a), _as_dict(b)
    fa, fb = da.get("fingerprint"), db.get("fingerprint")
    if fa and fa == fb:
        return
    diffs = {k: (da.get(k), db.get(k)) for k in sorted(set(da) | set(db))
             if k not in ("fingerprint", "include_dirs", "exec_path") and da.get(k) != db.get(k)}
    if not fa or not fb:
        diffs.setdefault("fingerprint", (fa, fb))
    detail = "; ".join(f"{k}: {va!r} != {vb!r}" for k, (va, vb) in diffs.items()) or "fingerprints differ"
    raise ToolchainMismatch(f"measurements from different toolchains are not comparable ({detail})", diffs)


def comparable(a: Toolchain | Mapping[str, Any], b: Toolchain | Mapping[str, Any]) -> bool:
    """True when :func:`assert_comparable` would not raise."""
    try:
        assert_comparable(a, b)
    except ToolchainMismatch:
        return False
    return True
