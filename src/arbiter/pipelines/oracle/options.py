"""Options, limits and constants of an oracle verification run. See ``docs/oracle.md``."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from arbiter.pipelines.oracle.generated_tests import DEFAULT_PLAN, GenPlan
from arbiter.timing.comparison import DEFAULT_METHOD
from arbiter.timing.cycles import DEFAULT_MODEL

Method = Literal["instructions", "cycles", "wall"]

#: Default number of tests measured per row (the largest by input size).
DEFAULT_MEASURE_CASES = 3
#: Default number of other tests, drawn at random, an answer is also run on under the meter (output checked).
DEFAULT_SPOT_CHECKS = 3
#: Default share of the measured tests (costliest for the source first) that make up "the largest tests".
DEFAULT_LARGEST_FRACTION = 0.5
#: Compiler output quoted in a CE reason, characters.
COMPILE_MESSAGE_CHARS = 2000
#: Failing case names listed per suite in a reason.
MAX_CASES_LISTED = 20

OUTPUT_FILES = ("sft.jsonl", "verified.jsonl", "rejected.jsonl", "best.jsonl", "report.json", "errors.jsonl",
                "config.json")


class InfraError(RuntimeError):
    """Verification could not finish because of our failure (sandbox, valgrind, compiler missing): the row goes
    to ``errors.jsonl`` and is retried by the next run, never rejected."""


@dataclass
class VerifyOptions:
    """Options of a verification run.

    - ``measure``: ``"cycles"`` (default: model cycles from one valgrind run per case with cache and branch
      simulation, deterministic, close to gem5's timing; ``docs/measurement.md``, "Cycles"), ``"instructions"``
      (valgrind counts, deterministic) or ``"wall"`` (interleaved repeats, ``wall_repeats`` rounds after one
      warm-up; seconds).
    - ``min_speedup``: the answer passes the speed gate when ``largest_speedup >= min_speedup`` (1.0: not
      slower than the source).
    - ``measure_cases``: how many tests (the largest by input bytes) are measured, >= 1.
    - ``largest_fraction``: which share of the measured tests, costliest for the source first, is "the largest
      tests" of the gate (``compare``'s ``largest_fraction``), in (0, 1].
    - ``spot_checks``: how many other tests the answer passed, drawn at random, it is also run on under the meter
      (its output checked), >= 0 (``docs/measurement.md``, "The measured program is the program that runs").
    - ``gen_plan``: generator plan (:class:`~arbiter.pipelines.oracle.generated_tests.GenPlan` or text).
    - ``cache_dir``: root of this pipeline's caches: generated suites in ``<cache_dir>/oracle_generated``, the
      source's instruction counts in ``<cache_dir>/oracle_source_counts`` (default ``$ARBITER_CACHE_DIR``, else
      ``~/.cache/arbiter``); ``use_cache=False`` neither reads nor writes them.
    - ``workers``: rows verified at once (default: one per core).
    - ``parquet``: also write Parquet copies of the outputs.
    - ``config``: sandbox configuration (default :class:`~arbiter.sandbox.config.SandboxConfig`).
    """

    measure: Method = DEFAULT_METHOD
    min_speedup: float = 1.0
    measure_cases: int = DEFAULT_MEASURE_CASES
    largest_fraction: float = DEFAULT_LARGEST_FRACTION
    spot_checks: int = DEFAULT_SPOT_CHECKS
    gen_plan: GenPlan | str = DEFAULT_PLAN
    cache_dir: str | os.PathLike | None = None
    use_cache: bool = True
    workers: int | None = None
    parquet: bool = False
    wall_repeats: int = 5
    config: Any = None

    def check(self) -> None:
        """Raise ``ValueError`` naming the first bad option."""
        if self.measure not in ("instructions", "cycles", "wall"):
            raise ValueError(f"measure must be 'instructions', 'cycles' or 'wall', got {self.measure!r}")
        if not (isinstance(self.min_speedup, (int, float)) and math.isfinite(self.min_speedup)
                and self.min_speedup > 0):
            raise ValueError(f"min_speedup must be a positive number, got {self.min_speedup!r}")
        if int(self.measure_cases) < 1:
            raise ValueError(f"measure_cases must be >= 1, got {self.measure_cases!r}")
        if int(self.spot_checks) < 0:
            raise ValueError(f"spot_checks must be >= 0, got {self.spot_checks!r}")
        if not 0 < self.largest_fraction <= 1:
            raise ValueError(f"largest_fraction must be in (0, 1], got {self.largest_fraction!r}")
        if self.workers is not None and int(self.workers) < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers!r}")
        if int(self.wall_repeats) < 1:
            raise ValueError(f"wall_repeats must be >= 1, got {self.wall_repeats!r}")
        if isinstance(self.gen_plan, str):
            self.gen_plan = GenPlan.parse(self.gen_plan)

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON (``gen_plan`` in its text form; ``config`` and the cache folder left out; with
        cycles, the cycle model's identity)."""
        model = {"cycle_model": DEFAULT_MODEL.identity()} if self.measure == "cycles" else {}
        return {"measure": self.measure, **model, "min_speedup": self.min_speedup,
                "measure_cases": int(self.measure_cases), "largest_fraction": self.largest_fraction,
                "spot_checks": int(self.spot_checks), "gen_plan": str(self.gen_plan), "workers": self.workers,
                "wall_repeats": self.wall_repeats}


def cache_subdir(opts: VerifyOptions, name: str) -> Path | None:
    """``<opts.cache_dir>/<name>``, or ``None`` (the module's default under ``$ARBITER_CACHE_DIR``)."""
    return None if opts.cache_dir is None else Path(opts.cache_dir) / name
