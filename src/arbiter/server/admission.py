"""Admission control and fair queuing over a number of judge slots: each tenant has hard caps on
running and waiting units; a free slot takes the next unit of the tenant, then of the flow (one
program, one batch), that has used the fewest judge seconds. A slot keeps to its last flow while
that flow is within ``affinity`` seconds of the least served one (its warm sandbox is reused).
Nothing here knows what a unit does. See ``docs/serve.md``, "Tenants and fairness"."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable

#: Judge seconds charged to a flow's unit before its first one finished (then a running mean).
FIRST_ESTIMATE = 0.05
#: Flows whose running mean is remembered after they empty (a retried flow keeps its history).
REMEMBERED_FLOWS = 4096


class Refused(Exception):
    """Not admitted: ``status`` (429 tenant over its caps, 503 server full or draining),
    ``reason`` (the metrics label), ``retry_after`` seconds."""

    def __init__(self, message: str, status: int, reason: str, retry_after: int):
        super().__init__(message)
        self.status, self.reason, self.retry_after = status, reason, max(1, int(retry_after))


@dataclass(frozen=True)
class Tenant:
    """Who sends work: ``judges`` (running units at most; ``None``: every slot), ``queue``
    (waiting units at most; a larger batch is admitted only into an empty queue), ``weight``
    (share of judge seconds against other busy tenants)."""

    name: str
    judges: int | None = None
    queue: int = 1024
    weight: float = 1.0


@dataclass
class Slot:
    """One judge slot's state: its last tenant and flow, and ``state`` a unit may keep there
    (``/run_code``'s warm sandbox of the last program)."""

    index: int
    tenant: str = ""
    flow: str = ""
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Unit:
    fn: Callable[[Slot], Any]
    future: Future
    tenant: str
    flow: str
    enqueued: float
    charged: float = 0.0


@dataclass
class _Flow:
    units: deque = field(default_factory=deque)
    vtime: float = 0.0
    running: int = 0


@dataclass
class _TenantState:
    tenant: Tenant
    flows: dict[str, _Flow] = field(default_factory=dict)
    vtime: float = 0.0
    waiting: int = 0
    running: int = 0


class FairQueue:
    """Runs units on ``slots`` threads. ``on_start(tenant, waited)`` and ``on_done(tenant,
    seconds)`` report to the metrics; ``queue`` caps waiting units over all tenants (not counting
    those that idle slots are about to take)."""

    def __init__(self, slots: int, *, queue: int = 4096, affinity: float = 2.0,
                 on_start: Callable[[str, float], None] | None = None,
                 on_done: Callable[[str, float], None] | None = None,
                 on_close: Callable[[Slot], None] | None = None):
        self.slots, self.capacity, self.affinity = slots, queue, affinity
        self._on_start, self._on_done, self._on_close = on_start, on_done, on_close
        self._cond = threading.Condition()
        self._tenants: dict[str, _TenantState] = {}
        self._estimates: OrderedDict[str, float] = OrderedDict()
        self._waiting = 0
        self._running = 0
        self._closed = False
        self._threads = [threading.Thread(target=self._work, args=(Slot(i),), daemon=True,
                                          name=f"arbiter-judge-{i}") for i in range(slots)]
        for t in self._threads:
            t.start()

    # ---- admission ------------------------------------------------------------------------
    def submit(self, tenant: Tenant, flow: str, fns: list[Callable[[Slot], Any]]) -> list[Future]:
        """Queue ``fns`` (one flow of ``tenant``), all or none; their futures. Raises
        :class:`Refused` when the tenant's or the server's queue has no room."""
        now = time.monotonic()
        with self._cond:
            st = self._tenant(tenant)
            self._admit(st, len(fns))
            f = st.flows.get(flow)
            if f is None:
                f = st.flows[flow] = _Flow(vtime=min((x.vtime for x in st.flows.values()), default=st.vtime))
            units = [_Unit(fn, Future(), tenant.name, flow, now) for fn in fns]
            f.units.extend(units)
            st.waiting += len(units)
            self._waiting += len(units)
            self._cond.notify(len(units))
        return [u.future for u in units]

    def _tenant(self, tenant: Tenant) -> _TenantState:
        st = self._tenants.get(tenant.name)
        if st is None:
            st = self._tenants[tenant.name] = _TenantState(tenant)
        st.tenant = tenant
        if not st.waiting and not st.running:  # idle time earns no credit
            busy = [s.vtime for s in self._tenants.values() if s is not st and (s.waiting or s.running)]
            st.vtime = max(st.vtime, min(busy, default=st.vtime))
        return st

    def _admit(self, st: _TenantState, n: int) -> None:
        if self._closed:
            raise Refused("the server is draining: retry on another node or later", 503, "draining", 2)
        wait = self.retry_after()
        cap = st.tenant.queue
        if st.waiting and st.waiting + n > cap:
            raise Refused(f"tenant {st.tenant.name!r} has {st.waiting} units waiting (at most {cap}); "
                          f"retry after {wait} s", 429, "tenant_queue", wait)
        # units an idle slot is about to take are not queued (a slot wakes a moment after a submit)
        queued = self._waiting + n - max(0, self.slots - self._running)
        if self._waiting and queued > self.capacity:
            raise Refused(f"the server has {self._waiting} units waiting (at most {self.capacity}); "
                          f"retry after {wait} s", 503, "server_queue", wait)

    def retry_after(self) -> int:
        """Seconds a refused client should wait: about what the queue needs to halve."""
        return max(1, round(self._waiting * FIRST_ESTIMATE / max(1, self.slots)))

    def cancel(self, future: Future) -> bool:
        """Take a still-waiting unit off the queue (its future cancelled); ``False`` once it started."""
        with self._cond:
            for st in self._tenants.values():
                for key, f in st.flows.items():
                    for u in f.units:
                        if u.future is future:
                            f.units.remove(u)
                            st.waiting -= 1
                            self._waiting -= 1
                            self._forget(st, key, f)
                            future.cancel()
                            return True
        return False

    # ---- the slots ------------------------------------------------------------------------
    def _work(self, slot: Slot) -> None:
        try:
            while (unit := self._next(slot)) is not None:
                self._run(slot, unit)
        finally:
            if self._on_close is not None:
                self._on_close(slot)

    def _next(self, slot: Slot) -> _Unit | None:
        with self._cond:
            while True:
                unit = self._pick(slot)
                if unit is not None:
                    return unit
                if self._closed and not self._waiting:
                    return None
                self._cond.wait(timeout=1.0)

    def _pick(self, slot: Slot) -> _Unit | None:
        """The next unit for ``slot`` (lock held): the least served eligible tenant, then its least
        served flow; the slot's own tenant and flow while within ``affinity`` of the least."""
        ready = [s for s in self._tenants.values()
                 if s.waiting and s.running < (s.tenant.judges or self.slots)]
        if not ready:
            return None
        st = self._least(ready, self._tenants.get(slot.tenant))
        key, f = self._flow(st, slot)
        unit = f.units.popleft()
        if not unit.future.set_running_or_notify_cancel():
            st.waiting -= 1
            self._waiting -= 1
            self._forget(st, key, f)
            return self._pick(slot)
        est = self._estimates.get(key, FIRST_ESTIMATE)
        st.waiting, st.running, self._waiting = st.waiting - 1, st.running + 1, self._waiting - 1
        self._running += 1
        f.running += 1
        st.vtime += est / st.tenant.weight
        f.vtime += est
        unit.charged = est
        slot.tenant, slot.flow = st.tenant.name, key
        return unit

    def _flow(self, st: _TenantState, slot: Slot) -> tuple[str, _Flow]:
        """The slot's own flow (its warm sandbox) while within ``affinity`` judge seconds of the
        least served flow (a flow of slow units falls behind after its first); else, among the
        flows that near, the one whose next unit waited longest."""
        flows = [(k, f) for k, f in st.flows.items() if f.units]
        low = min(f.vtime for _, f in flows)
        own = st.flows.get(slot.flow) if slot.tenant == st.tenant.name else None
        if own is not None and own.units and own.vtime <= low + self.affinity:
            return slot.flow, own
        near = [(k, f) for k, f in flows if f.vtime <= low + self.affinity]
        return min(near, key=lambda kf: kf[1].units[0].enqueued)

    def _least(self, ready: list[_TenantState], own: _TenantState | None) -> _TenantState:
        low = min(s.vtime for s in ready)
        if own is not None and own in ready and own.vtime <= low + self.affinity:
            return own
        return min(ready, key=lambda s: s.vtime)

    def _run(self, slot: Slot, unit: _Unit) -> None:
        started = time.monotonic()
        if self._on_start is not None:
            self._on_start(unit.tenant, started - unit.enqueued)
        try:
            result = unit.fn(slot)
        except BaseException as exc:  # handed to the waiting route
            unit.future.set_exception(exc)
        else:
            unit.future.set_result(result)
        finally:
            self._finish(unit, time.monotonic() - started)

    def _finish(self, unit: _Unit, seconds: float) -> None:
        with self._cond:
            st = self._tenants[unit.tenant]
            f = st.flows[unit.flow]
            st.running -= 1
            self._running -= 1
            f.running -= 1
            st.vtime += (seconds - unit.charged) / st.tenant.weight
            f.vtime += seconds - unit.charged
            known = self._estimates.pop(unit.flow, None)
            self._estimates[unit.flow] = seconds if known is None else 0.5 * known + 0.5 * seconds
            while len(self._estimates) > REMEMBERED_FLOWS:
                self._estimates.popitem(last=False)
            self._forget(st, unit.flow, f)
            self._cond.notify_all()
        if self._on_done is not None:
            self._on_done(unit.tenant, seconds)

    @staticmethod
    def _forget(st: _TenantState, key: str, f: _Flow) -> None:
        if not f.units and not f.running and st.flows.get(key) is f:
            del st.flows[key]

    # ---- state ----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, tuple[int, int]]:
        """``{tenant: (waiting, running)}``."""
        with self._cond:
            return {name: (s.waiting, s.running) for name, s in self._tenants.items()}

    @property
    def waiting(self) -> int:
        return self._waiting

    def close(self, wait: bool = True) -> None:
        """Refuse new units; the slots finish what is queued, then stop."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if wait:
            for t in self._threads:
                t.join()
