"""The ``cycles`` measure: a linear cycle model over the counting tool's simulated events (guest instructions,
L1 and last-level cache misses, branch mispredictions, traps), with the cache geometry pinned.

:class:`CycleModel` holds the weights; :data:`DEFAULT_MODEL` is the documented one (gem5's Skylake in
syscall-emulation mode, PIE's timing); :func:`parse_sim_line` reads the tool's simulation line. Figures from
different models (or cache geometries) are never comparable (:class:`ModelMismatch`). Weights, what gem5 charges
at start-up and the model's limits: ``docs/measurement.md``, "Cycles".
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from typing import Any, Mapping

__all__ = ["CACHES", "DEFAULT_MODEL", "NOMINAL_HZ", "SKYLAKE_4IPC", "ModelMismatch",
           "CycleModel", "SIM_OPTIONS", "check_same_model", "parse_sim_line"]


#: The simulated caches ``(size bytes, associativity, line bytes)``, pinned so figures never depend on the host:
#: L1 instruction and data 32 KiB 8-way, last level 8 MiB 16-way, 64-byte lines.
CACHES: Mapping[str, tuple[int, int, int]] = {"I1": (32768, 8, 64), "D1": (32768, 8, 64), "LL": (8388608, 16, 64)}


#: The tool options that turn simulation on with :data:`CACHES`.
SIM_OPTIONS: tuple[str, ...] = ("--sim=yes", *(f"--{k}={s},{a},{ln}" for k, (s, a, ln) in CACHES.items()))


#: The clock of gem5's Skylake configuration (darchr/gem5-skylake-config, PIE's timing): 3.5 GHz. A model cycle
#: is ``1e12 / NOMINAL_HZ`` gem5 ticks (picoseconds); only used to relate model figures to the card's ticks.
NOMINAL_HZ = 3.5e9


class ModelMismatch(ValueError):
    """Two figures come from different measures, cycle models or cache geometries: never compared or averaged."""


@dataclass(frozen=True)
class CycleModel:
    """``cycles = ir * Ir + l1_miss * (I1m + D1m) + ll_miss * (LLim + LLdm) + mispredict * (Bcm + Bim)
    + trap * (Sys + Pg)``, rounded to an integer. ``name`` identifies the weights in fingerprints. The field
    defaults are the default model's."""

    name: str = "gem5-skylake-se"
    ir: float = 0.55
    l1_miss: float = 12.0
    ll_miss: float = 200.0
    mispredict: float = 16.0
    trap: float = 30.0

    def cost(self, instructions: int, events: Mapping[str, int]) -> int:
        """The model's cycles for one run: ``instructions`` (Ir) and its simulated ``events``."""
        l1 = events["I1m"] + events["D1m"]
        ll = events["LLim"] + events["LLdm"]
        br = events["Bcm"] + events["Bim"]
        traps = events["Sys"] + events["Pg"] if self.trap else 0
        return max(1, round(self.ir * instructions + self.l1_miss * l1 + self.ll_miss * ll + self.mispredict * br
                            + self.trap * traps))

    def fingerprint(self) -> dict[str, Any]:
        """The weights and the simulated cache geometry: what a figure of this model depends on."""
        return {"model": asdict(self), "caches": {k: list(v) for k, v in CACHES.items()}}

    def identity(self) -> str:
        """``<name>:<sha256[:12] of the fingerprint>``: one string for run configurations (a run resumed under
        another model is refused)."""
        blob = json.dumps(self.fingerprint(), sort_keys=True)
        return f"{self.name}:{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


#: The default model, ``gem5-skylake-se``: what gem5's Skylake (PIE's timing, syscall emulation) charges a
#: program, start-up included: its instructions at about 1.8 per cycle (0.55 cycle each: ld.so's relocations and
#: symbol look-ups, libstdc++'s iostream initialisation and the program's own work alike), an L1 miss that hits the
#: next level 12 cycles, a miss to memory 200, a branch mispredict 16, and a trap 30 per system call and per page
#: first touched (emulated by gem5 at no simulated cost beyond the trap; TLB misses cost nothing there). An empty
#: dynamic ``int main() {}`` costs about 0.65 M cycles, about the card's 192 M-tick start-up floor at
#: :data:`NOMINAL_HZ`. The derivation and the fidelity figures: ``docs/measurement.md``, "Cycles".
DEFAULT_MODEL = CycleModel()


#: The previous default: a 4-wide core (0.25 cycle per instruction), same latencies, no traps. It undercharges
#: start-up instructions against cache misses (speedups about 10 % below PIE's on the iostream-vs-cstdio pairs);
#: kept for comparison (``bench/pie_report.py``).
SKYLAKE_4IPC = CycleModel(name="skylake-4ipc", ir=0.25, l1_miss=12.0, ll_miss=200.0, mispredict=16.0, trap=0.0)


_SIM = re.compile(rb"^==\d+== arbiter-count sim: ((?:\w+=\d+ ?)+)\s*$")


def parse_sim_line(log: bytes | None) -> dict[str, int] | None:
    """The simulated events from the tool's log: its **second-to-last** non-empty line (the count is the last;
    anything the program writes into the log comes before both), else ``None``."""
    lines = [ln for ln in (log or b"").splitlines() if ln.strip()]
    m = _SIM.match(lines[-2]) if len(lines) >= 2 else None
    if m is None:
        return None
    events = dict(pair.split(b"=") for pair in m.group(1).split())
    return {k.decode(): int(v) for k, v in events.items()}


def check_same_model(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> None:
    """Raise :class:`ModelMismatch` unless meter records ``a`` and ``b`` (``Comparison.meter``) come from the
    same measure, cycle model and cache geometry."""
    def identity(m: Mapping[str, Any] | None) -> tuple[Any, Any, Any]:
        m = m or {}
        return m.get("meter"), m.get("cycle_model"), m.get("caches")
    ia, ib = identity(a), identity(b)
    if ia != ib:
        raise ModelMismatch(f"figures from different measures or cycle models are not comparable: {ia} vs {ib}")
