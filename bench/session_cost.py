"""Where a session's CPU goes: one pooled-style sandbox, N sessions back to back.

Each session is timed in two parts, as the pool does them:

- *recycle*: ``end_session()`` (the server exits, its namespaces go) then ``arm()`` (the zygote
  clones the next session server into new namespaces, which mounts its tmpfs dirs, ``/proc``,
  ``/dev/pts``, makes its server and forks the blank forker);
- *open*: ``new_session()`` + ``load_python`` of a trivial program + one ``run_python`` case.

And, for comparison, N more cases in one session (*case*: the per-case cost).

For each part: the sandbox's CPU (its cpuacct group: zygote, session servers, forkers, cases),
the judge thread's own CPU (``time.thread_time``), and the CPU of the host's kernel threads
(``kworker``s: netns teardown, ``cleanup_net``, RCU work run outside our cgroups; summed from
``/proc/<pid>/stat`` of every kernel thread, so other load on the host adds to it a little).
Per session, in ms; medians of ``--rounds`` rounds of N.

``--ns``: also the bare kernel cost of each namespace flag (fork; ``unshare(flag)``; exit, in a
loop, as root, no sandbox), plus the kernel threads' CPU that follows.

``--no-plans``: without the page plans a pooled sandbox learns at its first recycle.

Usage: ``python bench/session_cost.py [-n 100] [--rounds 3] [--ns] [--no-plans]``.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path

SRC = "print(input())\n"


def kthread_cpu() -> float:
    """CPU seconds used so far by every kernel thread (children of kthreadd, pid 2)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2:].split()
        if rest[1] == "2" or d == "2":  # ppid 2: a kernel thread
            total += int(rest[11]) + int(rest[12])
    return total / tick


def proc_stat_busy() -> float:
    """Busy CPU seconds of the whole host (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    return (sum(vals) - vals[3] - vals[4]) / os.sysconf("SC_CLK_TCK")


def sched_ns(pid: int) -> int:
    """CPU nanoseconds a process (its main thread) has used so far (``/proc/<pid>/schedstat``)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def faults(pid: int) -> int:
    """Minor page faults of a process and of the children it reaped (``/proc/<pid>/stat``):
    for the zygote, every process of every session that ended (the session server reaps its
    namespace's processes as it ends, and the zygote reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[7]) + int(rest[8])
    except (OSError, ValueError, IndexError):
        return 0


def bench_sessions(n: int, rounds: int, settle: float, plans: bool = True) -> None:
    """Per session: the sandbox's cgroup CPU split into what each process used while alive
    (``schedstat``: the zygote, the session server, its forker) and what is left (process
    exits, namespace teardown, mounts freed: work done as processes die)."""
    from arbiter.sandbox.limits import Limits
    from arbiter.sandbox.sandbox import Sandbox
    from arbiter.sandbox.session import child_pids

    limits = Limits()
    sb = Sandbox(limits=limits, session=False)
    if plans:  # (as the pool does at a sandbox's first recycle)
        from arbiter.sandbox.pageplans import learn_pages
        learn_pages(sb)
    sb.arm(prefork=True)
    zyg = sb.session.zygote_pid
    cg = lambda: sb._cg.cpu_ns()  # noqa: E731
    parts = ("end", "arm", "open", "zygote", "server@arm", "forker@arm", "server@open", "forker@open", "judge",
             "faults")
    acc = {k: 0 for k in parts}

    def one_session(acc):
        j0 = time.thread_time_ns()
        c0, z0, q0 = cg(), sched_ns(zyg), faults(zyg)
        sb.end_session()
        c1 = cg()
        acc["faults"] += faults(zyg) - q0
        sb.arm()
        j1 = time.thread_time_ns()
        time.sleep(settle)  # the blank forker is forked and warms up after arm returns
        c2 = cg()
        server = sb.session.armed_pid
        kids = child_pids(server)
        s2, f2 = sched_ns(server), sum(sched_ns(k) for k in kids)
        j2 = time.thread_time_ns()
        sb.new_session({}, limits, python=True)
        sb.load_python(SRC, "")
        ex = sb.run_python(b"x\n")
        assert ex.status == "ok", ex
        j3 = time.thread_time_ns()
        time.sleep(settle)
        c3 = cg()
        s3, f3 = sched_ns(server), sum(sched_ns(k) for k in child_pids(server))
        acc["end"] += c1 - c0
        acc["arm"] += c2 - c1
        acc["open"] += c3 - c2
        acc["zygote"] += sched_ns(zyg) - z0
        acc["server@arm"] += s2
        acc["forker@arm"] += f2
        acc["server@open"] += s3 - s2
        acc["forker@open"] += f3 - f2
        acc["judge"] += (j1 - j0) + (j3 - j2)

    sb.new_session({}, limits, python=True)  # warm
    for _ in range(3):
        one_session(dict(acc))
    res = []
    kts = []
    for _ in range(rounds):
        a = {k: 0 for k in parts}
        k0 = kthread_cpu()
        for _ in range(n):
            one_session(a)
        kts.append(kthread_cpu() - k0)
        res.append(a)
    c0 = cg()
    for _ in range(n):
        sb.run_python(b"x\n")
    case = (cg() - c0) / n / 1e6
    sb.end_session()
    sb.close()
    med = {k: statistics.median(r[k] for r in res) / n / 1e6 for k in parts}
    print(f"per session (ms CPU), median of {rounds} rounds of {n}; load {os.getloadavg()[0]:.1f}; page plans"
          f" {sb.session.plans or 'none'}")
    print(f"sandbox cgroup: end {med['end']:.2f} + arm {med['arm']:.2f} + open (load, 1 case) {med['open']:.2f}"
          f" = {med['end'] + med['arm'] + med['open']:.2f}; one more case in a session {case:.2f}")
    alive = med["zygote"] + med["server@arm"] + med["forker@arm"] + med["server@open"] + med["forker@open"]
    total = med["end"] + med["arm"] + med["open"]
    print(f"  alive: zygote {med['zygote']:.2f}, server arm {med['server@arm']:.2f} open {med['server@open']:.2f},"
          f" forker arm {med['forker@arm']:.2f} open+case {med['forker@open']:.2f}; left (exits, teardown,"
          f" case child) {total - alive:.2f}")
    print(f"judge thread {med['judge']:.2f}; kernel threads {statistics.median(kts) / n * 1e3:.2f}; page faults per"
          f" session (every process of the sandbox, one case) {med['faults'] * 1e6:.0f}")


FLAGS = {"NEWNS": 0x00020000, "NEWUTS": 0x04000000, "NEWIPC": 0x08000000, "NEWPID": 0x20000000,
         "NEWNET": 0x40000000}


def bench_ns(n: int) -> None:
    """fork; unshare(flags); exit: CPU per iteration (this process's children, by rusage) and
    the kernel threads' CPU after the loop (settled 1 s)."""
    libc = ctypes.CDLL(None, use_errno=True)
    sets = [("none", 0)] + list(FLAGS.items()) + [("all", sum(FLAGS.values())),
                                                   ("all-net", sum(FLAGS.values()) - FLAGS["NEWNET"])]
    print(f"unshare cost per call (ms), {n} calls each; load {os.getloadavg()[0]:.1f}")
    print(f"{'flags':<8} {'children':>9} {'kthreads':>9} {'host busy':>10} {'wall':>7}")
    for name, flags in sets:
        r0 = os.times()
        k0, h0, t0 = kthread_cpu(), proc_stat_busy(), time.monotonic()
        for _ in range(n):
            pid = os.fork()
            if pid == 0:
                rc = libc.unshare(flags) if flags else 0
                if rc == 0 and flags & FLAGS["NEWPID"]:
                    g = os.fork()  # the namespace's first process
                    if g == 0:
                        os._exit(0)
                    os.waitpid(g, 0)
                os._exit(0 if rc == 0 else 1)
            _, st = os.waitpid(pid, 0)
            assert st == 0, (name, st)
        wall = time.monotonic() - t0
        time.sleep(1.0)  # (deferred teardown: the kernel threads' share)
        r1 = os.times()
        kt, host = kthread_cpu() - k0, proc_stat_busy() - h0
        ch = (r1.children_user + r1.children_system) - (r0.children_user + r0.children_system)
        print(f"{name:<8} {ch / n * 1e3:>9.3f} {kt / n * 1e3:>9.3f} {host / n * 1e3:>10.3f} {wall / n * 1e3:>7.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ns", action="store_true")
    ap.add_argument("--no-sessions", action="store_true")
    ap.add_argument("--no-plans", action="store_true", help="no page plans learnt (docs/sandbox.md, 'Page plans')")
    ap.add_argument("--settle", type=float, default=0.03, help="seconds to let the guest finish before a reading")
    args = ap.parse_args()
    if args.ns:
        bench_ns(args.n)
    if not args.no_sessions:
        bench_sessions(args.n, args.rounds, args.settle, plans=not args.no_plans)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    main()
