"""Generated test suites for oracle seed tasks: generator inputs, expected outputs from the seed's source.

:func:`build_generated_suite` runs the task's generator (``gen.py SEED SIZE``, in the sandbox) for each pair of
the :class:`GenPlan`, runs the seed's ``source_code`` (correct by contract) on each input for the expected
output, drops inputs the source fails on, and caches the suite on disk. Case names are ``gen_s{SIZE}_{SEED}``.
See ``docs/oracle.md`` ("Generated tests").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.judge.outputs import PROG, PYTHON, run_each
from arbiter.languages.compile_cache import atomic_write
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import SandboxError

#: Bumped when the stored format or the meaning of a cached suite changes.
CACHE_VERSION = 1
#: The default plan: SIZE 0 x 10, SIZE 1 x 10, SIZE 2 x 4, SIZE 3 x 2 (seeds 0..count-1 per size).
DEFAULT_PLAN = "0:10,1:10,2:4,3:2"
#: Limits of one generator run (the generator is Python; SIZE 3 inputs take ~50 ms to print).
GENERATOR_LIMITS = Limits(cpu_seconds=10.0, wall_seconds=30.0, memory_bytes=512 * MiB, processes=8,
                          output_bytes=64 * MiB)
CACHE_SUBDIR = "oracle_generated"


class GeneratedTestsError(RuntimeError):
    """The task cannot have generated tests: its ``source_code`` does not compile with its own command, or the
    compile command is refused. A task error (``INVALID_TASK``), not the answer's fault. Infrastructure
    failures (sandbox, missing compiler) raise :class:`~arbiter.sandbox.sandbox.SandboxError` or
    :class:`~arbiter.languages.cpp.toolchain.ToolchainUnavailable` instead."""


# --------------------------------------------------------------------------------------------------
# Plan


@dataclass(frozen=True)
class GenPlan:
    """Which generator inputs to ask for: ``levels`` is a tuple of ``(size, seeds)``.

    Text form (CLI ``--gen-plan``): comma-separated ``SIZE:COUNT`` (seeds ``0..COUNT-1``) or ``SIZE:S1+S2+...``
    (explicit seeds), e.g. ``"0:10,1:10,2:4,3:2"`` or ``"3:7+9"``. SIZE and seeds are non-negative integers.
    """

    levels: tuple[tuple[int, tuple[int, ...]], ...]

    @classmethod
    def parse(cls, text: str) -> "GenPlan":
        """Parse the text form. Raises ``ValueError`` naming the bad item (empty plan, non-integer, negative,
        a size given twice, a count of 0)."""
        levels: list[tuple[int, tuple[int, ...]]] = []
        seen: set[int] = set()
        items = [t.strip() for t in (text or "").split(",") if t.strip()]
        if not items:
            raise ValueError("the generator plan is empty; expected e.g. '0:10,1:10,2:4,3:2'")
        for item in items:
            m = re.fullmatch(r"(\d+):(\d+(?:\+\d+)*)", item)
            if not m:
                raise ValueError(f"bad generator plan item {item!r}; expected SIZE:COUNT or SIZE:SEED+SEED...")
            size = int(m.group(1))
            if size in seen:
                raise ValueError(f"generator plan gives SIZE {size} twice")
            seen.add(size)
            spec = m.group(2)
            if "+" in spec:
                seeds = tuple(int(s) for s in spec.split("+"))
                if len(set(seeds)) != len(seeds):
                    raise ValueError(f"generator plan item {item!r} repeats a seed")
            else:
                count = int(spec)
                if count < 1:
                    raise ValueError(f"generator plan item {item!r}: COUNT must be >= 1")
                seeds = tuple(range(count))
            levels.append((size, seeds))
        return cls(tuple(levels))

    def pairs(self) -> list[tuple[int, int]]:
        """The ``(size, seed)`` pairs in plan order."""
        return [(size, seed) for size, seeds in self.levels for seed in seeds]

    def __str__(self) -> str:
        return ",".join(f"{size}:{'+'.join(map(str, seeds))}" if seeds != tuple(range(len(seeds)))
                        else f"{size}:{len(seeds)}" for size, seeds in self.levels)


def case_name(size: int, seed: int) -> str:
    """The name of a generated case: ``gen_s{size}_{seed}``."""
    return f"gen_s{size}_{seed}"


# --------------------------------------------------------------------------------------------------
# Seed-derived specs (shared with the verifier)


def seed_compile_spec(seed: Any):
    """The :class:`~arbiter.languages.cpp.CompileSpec` of a seed row: its ``compile.command`` as is and its
    ``compile.timeout_sec`` (seconds).

    ``online_judge`` is ``False``: the card gives the exact command ("compile: expected compiler command and
    timeout") and the seed programs do not test ``ONLINE_JUDGE``; adding ``-DONLINE_JUDGE`` (a Codeforces/AtCoder
    convention) would change the command the task states. The answer and the source are compiled with this same
    spec, so their toolchain fingerprints match and their figures are comparable.
    """
    from arbiter.judge.build import CompileSpec

    return CompileSpec(command=seed.compile.command, timeout_seconds=float(seed.compile.timeout_sec),
                       online_judge=False)


def seed_run_limits(seed: Any) -> Limits:
    """The per-case :class:`Limits` of a seed row: CPU ``run.timeout_sec`` seconds, memory ``run.memory_mb``
    MiB (card: "run: runtime and memory limits"), wall ``2 * timeout_sec + 1`` seconds (arbiter's rule: a
    program that sleeps or blocks stops at the wall limit, as isolate and DMOJ do); other limits are
    :class:`Limits`' defaults (64 MiB of output)."""
    cpu = float(seed.run.timeout_sec)
    return Limits(cpu_seconds=cpu, wall_seconds=2 * cpu + 1.0, memory_bytes=int(seed.run.memory_mb) * MiB)


# --------------------------------------------------------------------------------------------------
# Suite


@dataclass
class GeneratedCase:
    """One generated test: ``name`` (``gen_s{size}_{seed}``), ``stdin`` and the source's ``stdout`` (bytes),
    ``size`` and ``seed``."""

    name: str
    stdin: bytes
    stdout: bytes
    size: int
    seed: int


@dataclass
class GeneratedSuite:
    """The generated tests of one task.

    - ``cases``: kept tests, plan order. ``dropped``: ``{"name", "size", "seed", "reason", "detail"}`` per
      input not kept, ``reason`` one of ``generator_failed``, ``duplicate_input``, ``source_failed``.
    - ``key``: the cache key (hex); ``generator_sha256`` / ``source_sha256``; ``plan``: its text form.
    - ``cached``: read from the cache; ``seconds``: wall seconds spent by this call.
    """

    task_id: str
    cases: list[GeneratedCase]
    dropped: list[dict[str, Any]]
    key: str
    generator_sha256: str
    source_sha256: str
    plan: str
    cached: bool = False
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        """``{"kept": n, "generator_failed": n, "duplicate_input": n, "source_failed": n}``."""
        out = {"kept": len(self.cases), "generator_failed": 0, "duplicate_input": 0, "source_failed": 0}
        for d in self.dropped:
            out[d["reason"]] = out.get(d["reason"], 0) + 1
        return out

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary (no test data): task, plan, counts, cache key, cached, seconds."""
        return {"task_id": self.task_id, "plan": self.plan, **self.counts(), "key": self.key,
                "generator_sha256": self.generator_sha256, "cached": self.cached,
                "seconds": round(self.seconds, 3),
                "dropped": [{k: d[k] for k in ("name", "reason", "detail")} for d in self.dropped
                            if d["reason"] != "duplicate_input"]}


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _bytes(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _to_json(suite: GeneratedSuite) -> dict[str, Any]:
    return {"version": CACHE_VERSION, "task_id": suite.task_id, "key": suite.key, "plan": suite.plan,
            "generator_sha256": suite.generator_sha256, "source_sha256": suite.source_sha256,
            "cases": [{"name": c.name, "size": c.size, "seed": c.seed, "stdin": _text(c.stdin),
                       "stdout": _text(c.stdout)} for c in suite.cases],
            "dropped": suite.dropped}


def _from_json(d: dict[str, Any]) -> GeneratedSuite:
    return GeneratedSuite(
        task_id=d["task_id"], key=d["key"], plan=d["plan"], generator_sha256=d["generator_sha256"],
        source_sha256=d["source_sha256"],
        cases=[GeneratedCase(c["name"], _bytes(c["stdin"]), _bytes(c["stdout"]), int(c["size"]), int(c["seed"]))
               for c in d["cases"]],
        dropped=list(d["dropped"]), cached=True)


def default_cache_dir() -> Path:
    """``$ARBITER_CACHE_DIR/oracle_generated`` (default ``~/.cache/arbiter/oracle_generated``)."""
    from arbiter.languages.compile_cache import cache_root

    return cache_root() / CACHE_SUBDIR


def suite_key(seed: Any, generator_sha256: str, plan: GenPlan) -> str:
    """The cache key (64 hex chars) of a task's generated suite: sha256 of the canonical JSON of
    ``[CACHE_VERSION, task_id, generator sha256, [(size, seed)...], source sha256, compile command,
    run.timeout_sec, run.memory_mb]``."""
    src = hashlib.sha256(seed.source_code.encode("utf-8", "surrogatepass")).hexdigest()  # a key: any str
    raw = json.dumps([CACHE_VERSION, seed.task_id, generator_sha256, plan.pairs(), src, seed.compile.command,
                      float(seed.run.timeout_sec), int(seed.run.memory_mb)], separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()


_locks_guard = threading.Lock()
_locks: dict[str, threading.Lock] = {}


def _lock_for(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _tail(b: bytes, n: int = 300) -> str:
    return b[-n:].decode("utf-8", "replace").strip()


def _exec_detail(ex) -> str:
    why = ex.status.value if ex.status is not Status.RUNTIME_ERROR else (
        f"exit {ex.exit_code}" if ex.signal is None else f"signal {ex.signal}")
    msg = _tail(ex.stderr)
    return f"{why}: {ex.detail}" + (f": {msg}" if msg else "") if ex.detail else why + (f": {msg}" if msg else "")


def find_generator(generators_dir: str | os.PathLike, task_id: str) -> Path | None:
    """``<generators_dir>/<task_id>.py`` when it is a regular file, else ``None``."""
    p = Path(generators_dir) / f"{task_id}.py"
    return p if p.is_file() else None


def build_generated_suite(seed: Any, generator: str | os.PathLike, plan: GenPlan | str = DEFAULT_PLAN, *,
                          cache_dir: str | os.PathLike | None = None, use_cache: bool = True,
                          config: SandboxConfig | None = None,
                          generator_limits: Limits = GENERATOR_LIMITS) -> GeneratedSuite:
    """Build (or read from the cache) the generated suite of one seed task; see the module docstring.

    - ``seed``: a :class:`~arbiter.datasets.oracle.SeedRow` (uses ``task_id``, ``source_code``,
      ``compile``, ``run``).
    - ``generator``: path of the task's generator (``gen.py SEED [SIZE]``, prints one input).
    - ``plan``: a :class:`GenPlan` or its text form. ``cache_dir``: default :func:`default_cache_dir`;
      ``use_cache=False`` neither reads nor writes it.
    - ``config``: sandbox configuration; ``generator_limits``: limits of each generator run.

    Returns a :class:`GeneratedSuite` (possibly with zero cases when every input was dropped: the caller
    decides; zero tests is never a pass). Raises :class:`GeneratedTestsError` when the source does not
    compile or its command is refused; :class:`~arbiter.sandbox.sandbox.SandboxError` /
    ``ToolchainUnavailable`` for our own failures; ``OSError`` when the generator cannot be read; ``ValueError``
    for a bad plan text.
    """
    t0 = time.monotonic()
    plan = GenPlan.parse(plan) if isinstance(plan, str) else plan
    gen_bytes = Path(generator).read_bytes()
    gsha = hashlib.sha256(gen_bytes).hexdigest()
    key = suite_key(seed, gsha, plan)
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    safe_id = re.sub(r"[^A-Za-z0-9_.-]", "_", seed.task_id)[:80]
    path = root / f"{safe_id}-{key[:32]}.json"
    with _lock_for(key):
        suite = _cached(path, key) if use_cache else None
        if suite is None:
            cfg = config or SandboxConfig()
            dropped: list[dict[str, Any]] = []
            inputs = _generate_inputs(seed, gen_bytes, plan, cfg, generator_limits, dropped)
            cases = _source_outputs(seed, inputs, cfg, dropped)
            suite = GeneratedSuite(task_id=seed.task_id, cases=cases, dropped=dropped, key=key,
                                   generator_sha256=gsha,
                                   source_sha256=hashlib.sha256(seed.source_code.encode("utf-8", "surrogateescape"))
                                   .hexdigest(), plan=str(plan))
            if use_cache:
                store_suite(path, _to_json(suite))
        suite.seconds = time.monotonic() - t0
        return suite


def _cached(path: Path, key: str) -> GeneratedSuite | None:
    """The stored suite of ``key``, or ``None`` (absent or unreadable: rebuilt and overwritten)."""
    if not path.is_file():
        return None
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        if d.get("version") == CACHE_VERSION and d.get("key") == key:
            return _from_json(d)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _generate_inputs(seed: Any, gen_bytes: bytes, plan: GenPlan, cfg: SandboxConfig, generator_limits: Limits,
                     dropped: list[dict[str, Any]]) -> list[tuple[int, int, bytes]]:
    """Run the generator for every ``(SIZE, SEED)`` of the plan; failed runs and repeated inputs are dropped."""
    inputs: list[tuple[int, int, bytes]] = []
    seen: dict[bytes, str] = {}
    pairs = list(plan.pairs())
    runs = (([PYTHON, "-I", "-S", f"{PROG}/gen.py", str(s), str(size)], b"") for size, s in pairs)
    with contextlib.closing(run_each({"gen.py": gen_bytes}, runs, generator_limits, config=cfg)) as execs:
        for (size, s), ex in zip(pairs, execs):
            name = case_name(size, s)
            if ex.status is Status.SANDBOX_ERROR:
                raise SandboxError(f"generator run {name} of {seed.task_id}: {ex.detail}")
            if not ex.ok or not ex.stdout.strip():
                detail = _exec_detail(ex) if not ex.ok else "empty output"
                dropped.append({"name": name, "size": size, "seed": s, "reason": "generator_failed",
                                "detail": detail})
                continue
            digest = hashlib.sha256(ex.stdout).digest()
            if digest in seen:
                dropped.append({"name": name, "size": size, "seed": s, "reason": "duplicate_input",
                                "detail": f"same input as {seen[digest]}"})
                continue
            seen[digest] = name
            inputs.append((size, s, ex.stdout))
    return inputs


def _source_outputs(seed: Any, inputs: list[tuple[int, int, bytes]], cfg: SandboxConfig,
                    dropped: list[dict[str, Any]]) -> list[GeneratedCase]:
    """The seed's source on every input: the expected outputs; inputs it fails on are dropped."""
    from arbiter.judge.build import CompileCommandError, build_cpp

    try:
        comp = build_cpp(seed.source_code, seed_compile_spec(seed))
    except CompileCommandError as exc:
        raise GeneratedTestsError(f"task {seed.task_id}: compile command refused: {exc}") from exc
    if not comp.ok:
        raise GeneratedTestsError(f"task {seed.task_id}: the seed's source_code does not compile with its own "
                                  f"command: {comp.message[:500]}")
    limits = seed_run_limits(seed)
    cases: list[GeneratedCase] = []
    runs = (([f"{PROG}/main"], stdin) for _, _, stdin in inputs)
    with contextlib.closing(run_each({"main": comp.binary}, runs, limits, config=cfg)) as execs:
        for (size, s, stdin), ex in zip(inputs, execs):
            name = case_name(size, s)
            if ex.status is Status.SANDBOX_ERROR:
                raise SandboxError(f"source run {name} of {seed.task_id}: {ex.detail}")
            if not ex.ok or ex.stdout_truncated:
                detail = _exec_detail(ex) if not ex.ok else "output truncated"
                dropped.append({"name": name, "size": size, "seed": s, "reason": "source_failed", "detail": detail})
                continue
            cases.append(GeneratedCase(name, stdin, ex.stdout, size, s))
    return cases


def store_suite(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically (:func:`arbiter.languages.compile_cache.atomic_write`: a temporary
    file in the same directory, then rename). A cache that cannot be written is not an error: the suite is simply
    rebuilt next time."""
    try:
        atomic_write(path, [json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode("ascii")], mode=0o600)
    except OSError:
        pass
