"""Precompiled headers for C++ compiles, one per exact flag set and toolchain.

Two kinds (``stdcxx``: ``bits/stdc++.h.gch``; ``prefix``: the program's leading standard-header
includes), both invisible to the program and unreachable from its ``#include``; built in the
sandbox, installed atomically, LRU-bounded. The rules and the store's location:
``docs/languages.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from arbiter.languages.compile_cache import GiB, cache_root, env_bytes, file_lock
from arbiter.languages.cpp.toolchain import Toolchain, find_system_header
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox, SandboxError

PCH_DIR_ENV = "ARBITER_PCH_DIR"
PCH_CACHE_BYTES_ENV = "ARBITER_PCH_CACHE_BYTES"
DEFAULT_MAX_BYTES = 2 * GiB
#: The directory under which each compile shows its PCH, at ``MOUNT_POINT/<random>``.
MOUNT_POINT = "/pch"
#: The part of an entry shown to the compiler (``meta.json`` beside it is not).
SHOWN = "pch"
#: An entry used this recently is never evicted (a compile may be reading it through its mount).
EVICT_GRACE_SECONDS = 600.0
#: A build that failed (g++ rejected the header set, or did not use the result) is retried after
#: this long; a sandbox failure is retried at the next compile.
FAILED_RETRY_SECONDS = 3600.0
#: How long a first sighting of a header prefix is remembered (markers in ``seen/``).
SEEN_KEEP_SECONDS = 7 * 86400.0
#: Limits for building one PCH in the sandbox (a bits/stdc++.h PCH is ~100 MB, built in ~3.5 s).
BUILD_LIMITS = Limits(cpu_seconds=120, wall_seconds=180, memory_bytes=2 * GiB, processes=16,
                      output_bytes=1 * GiB, stderr_bytes=64 * 1024, open_files=256,
                      scratch_bytes=1 * GiB, stack_bytes=256 * MiB)
PROBE_LIMITS = Limits(cpu_seconds=60, wall_seconds=90, memory_bytes=2 * GiB, processes=16,
                      output_bytes=64 * MiB, stderr_bytes=1 * MiB, open_files=256,
                      scratch_bytes=256 * MiB, stack_bytes=256 * MiB)
STDCXX = "bits/stdc++.h"

#: Flags that only affect linking or plumbing; they cannot change a PCH's validity.
_LINK_ONLY = frozenset({"-static", "-static-libgcc", "-static-libstdc++", "-s", "-pipe"})
_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<([^<>\s]+)>[ \t]*(?://.*)?$")
_SKIP_LINE = re.compile(r"^[ \t]*(?://.*|/\*(?:[^*]|\*(?!/))*\*/[ \t]*)?$")
_STD_HEADER = re.compile(r"^(?:[a-z_][a-z0-9_]*(?:\.h)?|bits/stdc\+\+\.h)$")
_ANY_STDCXX = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]bits/stdc\+\+\.h[>\"]", re.M)
#: Headers without include guards: re-including them is not a no-op, so a prefix stops there.
_UNGUARDED = frozenset({"cassert", "assert.h"})
#: C library wrappers: cheap to parse, never worth a PCH on their own.
_C_HEADERS = frozenset(
    "cassert cctype cerrno cfenv cfloat cinttypes ciso646 climits clocale cmath csetjmp csignal "
    "cstdarg cstdbool cstddef cstdint cstdio cstdlib cstring ctime cuchar cwchar cwctype".split())


@dataclass(frozen=True)
class PchPlan:
    """Which PCH a compile can use.

    - ``kind``: ``stdcxx`` or ``prefix`` (module docstring).
    - ``headers``: the headers it holds (``("bits/stdc++.h",)`` for ``stdcxx``).
    - ``flags``: the compile flags it is built for (link-only flags and ``-pipe`` removed).
    - ``key``: 32 hex chars over kind, headers, flags and the toolchain's base fingerprint.
    """

    kind: str
    headers: tuple[str, ...]
    flags: tuple[str, ...]
    key: str

    def compile_args(self, mount: str) -> tuple[str, ...]:
        """The extra g++ arguments that offer this PCH when its directory is at ``mount``."""
        if self.kind == "stdcxx":
            return (f"-I{mount}",)
        return ("-include", f"{mount}/prefix.h")

    def gch_name(self, token: str) -> str:
        """The ``.gch`` file's path inside the shown directory; ``token`` (random, from the
        entry's ``meta.json``) names the ``stdcxx`` one inside its ``bits/stdc++.h.gch/``
        directory (module docstring)."""
        return f"bits/stdc++.h.gch/{token}.gch" if self.kind == "stdcxx" else "prefix.h.gch"

    def header_text(self) -> str:
        """The text of ``prefix.h`` (one ``#include <h>`` per header)."""
        return "".join(f"#include <{h}>\n" for h in self.headers)


def leading_std_headers(source: str) -> tuple[str, ...]:
    """The standard headers the program includes before any other token, in order (see the
    module docstring for what ends the prefix). ``()`` when the first token is not such an
    include."""
    if source.startswith("\ufeff"):
        source = source[1:]
    out: list[str] = []
    for raw in source.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        if line.endswith("\\") or "??/" in line or "\r" in line:
            break
        m = _INCLUDE_LINE.match(line)
        if m:
            name = m.group(1)
            if not _STD_HEADER.match(name) or name in _UNGUARDED:
                break
            if name not in out:
                out.append(name)
            continue
        if _SKIP_LINE.match(line):
            continue
        break
    return tuple(out)


def pch_flags(flags: tuple[str, ...]) -> tuple[str, ...]:
    """The flags a PCH is built for and keyed by: ``flags`` without link-only ones
    (``-static*``, ``-s``, ``-l...``) and ``-pipe``, which cannot change its validity."""
    return tuple(f for f in flags if f not in _LINK_ONLY and not f.startswith("-l"))


def plan_pch(source: str, flags: tuple[str, ...], toolchain: Toolchain) -> PchPlan | None:
    """The PCH to offer for ``source`` compiled with ``flags``, or ``None``.

    ``stdcxx`` when the program's first include is ``bits/stdc++.h`` or it includes it anywhere
    without a standard-header prefix (g++ then decides if the PCH applies); ``prefix`` when it
    starts with a run of standard headers containing at least one C++ library header.
    """
    prefix = leading_std_headers(source)
    if (prefix and prefix[0] == STDCXX) or (not prefix and _ANY_STDCXX.search(source)):
        kind, headers = "stdcxx", (STDCXX,)
    elif prefix and any(h not in _C_HEADERS and not h.endswith(".h") for h in prefix):
        kind, headers = "prefix", prefix
    else:
        return None
    pf = pch_flags(tuple(flags))
    raw = json.dumps(["pch-v2", kind, list(headers), list(pf), toolchain.base_fingerprint,
                      toolchain.cpu], separators=(",", ":"))
    return PchPlan(kind, headers, pf, hashlib.sha256(raw.encode()).hexdigest()[:32])


def new_mount_point() -> str:
    """A fresh random directory under :data:`MOUNT_POINT` to show one compile its PCH at."""
    return f"{MOUNT_POINT}/{secrets.token_hex(16)}"


def gch_lines(stderr: str) -> tuple[list[str], list[str]]:
    """From g++ ``-H`` output: the ``.gch`` files used (``! path``) and those found but rejected
    (``x path``)."""
    used, rejected = [], []
    for line in stderr.splitlines():
        if line.endswith(".gch"):
            if line.startswith("! "):
                used.append(line[2:].strip())
            elif line.startswith("x "):
                rejected.append(line[2:].strip())
    return used, rejected


def _reachable_by_others(path: Path) -> bool:
    """True when every existing ancestor of ``path`` can be traversed by other users."""
    p = path.resolve()
    for d in [p, *p.parents]:
        try:
            st = os.stat(d)
        except FileNotFoundError:
            continue
        if not st.st_mode & stat.S_IXOTH:
            return False
    return True


def default_pch_root() -> Path:
    """The PCH store directory (module docstring). Raises ``RuntimeError`` when the fallback
    directory exists but is not a plain directory owned by us."""
    env = os.environ.get(PCH_DIR_ENV)
    if env:
        return Path(env).expanduser()
    preferred = cache_root() / "pch"
    if os.geteuid() != 0 or _reachable_by_others(preferred):
        return preferred
    base = "/var/tmp" if os.path.isdir("/var/tmp") else tempfile.gettempdir()
    fallback = Path(base) / f"arbiter-pch-{os.geteuid()}"
    try:
        os.mkdir(fallback, 0o755)
    except FileExistsError:
        pass
    st = os.lstat(fallback)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise RuntimeError(f"{fallback} is not a directory owned by uid {os.geteuid()} and closed to others; "
                           f"set ${PCH_DIR_ENV}")
    os.chmod(fallback, 0o755)
    return fallback


class PchStore:
    """Built PCHs on disk, one directory per :class:`PchPlan` key (module docstring).

    ``root`` defaults to :func:`default_pch_root`; ``max_bytes`` to ``$ARBITER_PCH_CACHE_BYTES``
    or 2 GiB. Thread- and process-safe.
    """

    def __init__(self, root: str | Path | None = None, max_bytes: int | None = None,
                 config: SandboxConfig | None = None):
        self.root = Path(root) if root is not None else default_pch_root()
        self.max_bytes = max_bytes if max_bytes is not None else env_bytes(PCH_CACHE_BYTES_ENV, DEFAULT_MAX_BYTES)
        self.config = config
        #: Seconds spent by the last build done through this store (0 when none); informational,
        #: for benches and tests (not meaningful when threads share the store).
        self.last_build_seconds = 0.0

    def entry_dir(self, plan: PchPlan) -> Path:
        """Where ``plan``'s PCH lives once built: ``meta.json`` and the shown directory
        (:data:`SHOWN`)."""
        return self.root / plan.key

    def _mkdirs(self) -> None:
        for d in (self.root, self.root / "seen", self.root / "failed", self.root / "locks"):
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o755)

    def lookup(self, plan: PchPlan) -> Path | None:
        """The directory to show the compiler for ``plan`` (refreshing the entry's LRU time), or
        ``None`` when it is not built."""
        d = self.entry_dir(plan)
        try:
            token = json.loads((d / "meta.json").read_text()).get("token")
        except (OSError, ValueError, AttributeError):
            return None
        if not isinstance(token, str) or not (d / SHOWN / plan.gch_name(token)).is_file():
            return None
        try:
            os.utime(d)
        except OSError:
            pass
        return d / SHOWN

    def ensure(self, plan: PchPlan, toolchain: Toolchain, *, build: bool = True,
               config: SandboxConfig | None = None) -> Path | None:
        """The directory to show the compiler for ``plan`` (:meth:`lookup`), building it when the policy allows (first sight
        for ``stdcxx``, second for ``prefix``; not while another builder holds the lock; not
        within an hour of a failed build). Returns ``None`` when no PCH is available now; never
        raises for a build failure (the compile simply goes without a PCH)."""
        self.last_build_seconds = 0.0
        found = self.lookup(plan)
        if found is not None or not build:
            return found
        try:
            self._mkdirs()
        except OSError:
            return None
        failed = self.root / "failed" / plan.key
        try:
            if time.time() - failed.stat().st_mtime < FAILED_RETRY_SECONDS:
                return None
        except FileNotFoundError:
            pass
        if plan.kind == "prefix":
            seen = self.root / "seen" / plan.key
            if not seen.exists():
                seen.touch()
                return None
        with file_lock(self.root / "locks" / f"{plan.key}.lock", timeout=0) as got:
            if not got:
                return None  # someone else is building it; compile without a PCH meanwhile
            found = self.lookup(plan)
            if found is not None:
                return found
            t0 = time.monotonic()
            transient = False
            try:
                ok, why = self._build(plan, toolchain, config or self.config)
            except (SandboxError, OSError) as exc:  # ours, maybe transient: retried next time
                ok, why, transient = False, f"{type(exc).__name__}: {exc}", True
            self.last_build_seconds = time.monotonic() - t0
            if not ok and transient:
                return None
            if not ok:
                try:
                    failed.write_text(why[-4000:])
                except OSError:
                    pass
                return None
        self.evict()
        return self.lookup(plan)

    def _build(self, plan: PchPlan, toolchain: Toolchain, config: SandboxConfig | None) -> tuple[bool, str]:
        compiler = toolchain.exec_path or toolchain.compiler_path
        with Sandbox(limits=BUILD_LIMITS, config=config) as sb:
            if plan.kind == "stdcxx":
                header = find_system_header(toolchain, STDCXX)
                if header is None:
                    return False, f"{STDCXX} not found in {toolchain.include_dirs}"
            else:
                sb.put("prefix.h", plan.header_text().encode())
                header = "prefix.h"
            argv = [compiler, *plan.flags, "-x", "c++-header", header, "-o", "out.gch"]
            ex = sb.run(argv, limits=BUILD_LIMITS, keep=["out.gch"])
            if ex.status is not Status.OK:
                return False, f"build failed ({ex.status.value} {ex.detail}): " + ex.stderr.decode("utf-8", "replace")
            gch = sb.fetch("out.gch", max_bytes=BUILD_LIMITS.output_bytes)
        if not gch:
            return False, "the built PCH could not be fetched"
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=self.root))
        token = secrets.token_hex(16)
        try:
            os.chmod(tmp, 0o755)
            shown = tmp / SHOWN
            target = shown / plan.gch_name(token)
            target.parent.mkdir(parents=True, exist_ok=True)
            for d in (shown, *[p for p in target.parents if shown in p.parents]):
                os.chmod(d, 0o755)
            target.write_bytes(gch)
            os.chmod(target, 0o644)
            if plan.kind == "prefix":
                (shown / "prefix.h").write_text(plan.header_text())
                os.chmod(shown / "prefix.h", 0o644)
            used, why = self._probe(shown, plan, compiler, config)
            if not used:
                return False, f"the built PCH is not used by g++: {why}"
            (tmp / "meta.json").write_text(json.dumps({
                "kind": plan.kind, "headers": list(plan.headers), "flags": list(plan.flags),
                "toolchain": toolchain.with_flags(plan.flags).to_dict(), "bytes": len(gch),
                "built": time.time(), "token": token}, indent=1))
            os.chmod(tmp / "meta.json", 0o644)
            try:
                os.rename(tmp, self.entry_dir(plan))
            except OSError:  # another process installed it first
                pass
            return True, ""
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def _probe(self, directory: Path, plan: PchPlan, compiler: str,
               config: SandboxConfig | None) -> tuple[bool, str]:
        """Compile a tiny program with ``-H`` through a real mount as compiles get it; True when
        g++ reports the ``.gch`` as used."""
        src = plan.header_text() + "int main() { return 0; }\n"
        mount = new_mount_point()
        with Sandbox(limits=PROBE_LIMITS, mounts=[(str(directory), mount)], config=config) as sb:
            sb.put("probe.cpp", src.encode())
            ex = sb.run([compiler, *plan.flags, *plan.compile_args(mount), "-H", "-Winvalid-pch",
                         "-fsyntax-only", "probe.cpp"], limits=PROBE_LIMITS)
        text = ex.stderr.decode("utf-8", "replace")
        used, _ = gch_lines(text)
        return bool(used), "\n".join(text.splitlines()[:20])

    def entries(self) -> list[tuple[Path, int, float]]:
        """``(directory, size_bytes, last_use_mtime)`` of every built PCH."""
        out = []
        try:
            dirs = [e for e in os.scandir(self.root) if e.is_dir() and len(e.name) == 32]
        except OSError:
            return out
        for e in dirs:
            size = 0
            for dirpath, _, files in os.walk(e.path):
                for f in files:
                    try:
                        size += os.lstat(os.path.join(dirpath, f)).st_size
                    except OSError:
                        pass
            try:
                mtime = e.stat().st_mtime
            except OSError:
                continue
            out.append((Path(e.path), size, mtime))
        return out

    def evict(self) -> int:
        """Remove least recently used PCHs while the store exceeds ``max_bytes``, never one used
        in the last :data:`EVICT_GRACE_SECONDS`. Returns how many were removed."""
        entries = self.entries()
        total = sum(s for _, s, _ in entries)
        removed = 0
        now = time.time()
        try:  # leftovers of builders or evictions that died midway
            for e in os.scandir(self.root):
                if e.name.startswith((".build-", ".evict-")) and now - e.stat().st_mtime > FAILED_RETRY_SECONDS:
                    shutil.rmtree(e.path, ignore_errors=True)
        except OSError:
            pass
        for sub, age in (("seen", SEEN_KEEP_SECONDS), ("failed", FAILED_RETRY_SECONDS)):
            try:  # old markers: a prefix seen once a week ago is not worth remembering
                for e in os.scandir(self.root / sub):
                    if now - e.stat().st_mtime > age:
                        os.unlink(e.path)
            except OSError:
                pass
        for path, size, mtime in sorted(entries, key=lambda e: e[2]):
            if total <= self.max_bytes:
                break
            if now - mtime < EVICT_GRACE_SECONDS:
                continue
            trash = path.with_name(f".evict-{path.name}-{os.getpid()}")
            try:
                os.rename(path, trash)
            except OSError:
                continue
            shutil.rmtree(trash, ignore_errors=True)
            total -= size
            removed += 1
        return removed
