"""Counters of the service, written as Prometheus text (``GET /metrics``). See ``docs/serve.md``."""

from __future__ import annotations

import threading
import time
from collections import Counter

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """Queue depth, busy judges, cases run, arbiter verdicts (``/v1/judge``, ``/v1/score``), SandboxFusion
    statuses of ``/run_code`` answers (a metric of their own: its ``SandboxError`` is SandboxFusion's "not run",
    e.g. an unsupported language, not arbiter's ``SANDBOX_ERROR``), our sandbox errors, request latency."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.queue_depth = 0
        self.busy = 0
        self.cancelled = 0
        self.refused = 0
        self.cases = 0
        self.sandbox_errors = 0
        self.verdicts: Counter[str] = Counter()
        self.run_code: Counter[str] = Counter()
        self._lat: dict[str, list[int]] = {}
        self._lat_sum: Counter[str] = Counter()
        self._lock = threading.Lock()

    def verdict(self, outcome: str, cases: int) -> None:
        with self._lock:
            self.verdicts[outcome] += 1
            self.cases += cases
            if outcome == "SANDBOX_ERROR":
                self.sandbox_errors += 1

    def run_code_answer(self, status: str) -> None:
        """One ``/run_code`` answer with SandboxFusion's ``status`` (Success, Failed, SandboxError)."""
        with self._lock:
            self.run_code[status] += 1
            self.cases += 1

    def observe(self, route: str, seconds: float) -> None:
        with self._lock:
            counts = self._lat.setdefault(route, [0] * (len(BUCKETS) + 1))
            i = next((i for i, b in enumerate(BUCKETS) if seconds <= b), len(BUCKETS))
            counts[i] += 1
            self._lat_sum[route] += seconds

    def text(self) -> str:
        """The Prometheus text exposition of every counter."""
        up = max(1e-9, time.monotonic() - self.started)
        lines = [
            "# TYPE arbiter_queue_depth gauge", f"arbiter_queue_depth {self.queue_depth}",
            "# TYPE arbiter_judges_busy gauge", f"arbiter_judges_busy {self.busy}",
            "# TYPE arbiter_cases_total counter", f"arbiter_cases_total {self.cases}",
            "# TYPE arbiter_cases_per_second gauge", f"arbiter_cases_per_second {self.cases / up:.3f}",
            "# TYPE arbiter_sandbox_errors_total counter", f"arbiter_sandbox_errors_total {self.sandbox_errors}",
            "# TYPE arbiter_cancelled_total counter", f"arbiter_cancelled_total {self.cancelled}",
            "# TYPE arbiter_refused_total counter", f"arbiter_refused_total {self.refused}",
            "# TYPE arbiter_verdicts_total counter",
        ]
        with self._lock:
            lines += [f'arbiter_verdicts_total{{outcome="{k}"}} {v}' for k, v in sorted(self.verdicts.items())]
            lines.append("# TYPE arbiter_run_code_answers_total counter")
            lines += [f'arbiter_run_code_answers_total{{status="{k}"}} {v}' for k, v in sorted(self.run_code.items())]
            lines.append("# TYPE arbiter_request_seconds histogram")
            for route, counts in sorted(self._lat.items()):
                total = 0
                for b, n in zip(BUCKETS + (float("inf"),), counts):
                    total += n
                    le = "+Inf" if b == float("inf") else f"{b:g}"
                    lines.append(f'arbiter_request_seconds_bucket{{route="{route}",le="{le}"}} {total}')
                lines.append(f'arbiter_request_seconds_sum{{route="{route}"}} {self._lat_sum[route]:.6f}')
                lines.append(f'arbiter_request_seconds_count{{route="{route}"}} {total}')
        return "\n".join(lines) + "\n"
