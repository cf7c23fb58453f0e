"""The verdict key (arbiter.judge.step.key) and the store behind it: two tasks that differ in
anything that can decide a verdict never share a key, so a verdict is never served across
different programs, suites, limits, checkers, scoring modes, preludes, compile specs, case orders
or sandbox configurations; tasks that differ only in their label or suite origin share one.
Property-tested with hypothesis (no sandbox: keys and stored verdicts only)."""

from __future__ import annotations

import dataclasses
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.step.key import effective_order, suite_digest, verdict_key
from arbiter.judge.step.store import DiskStore, VerdictStore
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.testsuite import CallCase, StdioCase, TestSuite
from arbiter.judge.verdict import CaseResult, Outcome, Verdict
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.limits import Limits

PROPS = settings(max_examples=int(os.environ.get("ARBITER_FUZZ_EXAMPLES", "100")), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=False),
                         st.text(max_size=8))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                                 st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                           max_leaves=8)
stdio = st.builds(lambda name, stdin, outs: StdioCase(name, stdin, tuple(outs)),
                  st.text(max_size=4), st.binary(max_size=12), st.lists(st.binary(max_size=8), min_size=1, max_size=2))
calls = st.builds(lambda name, fn, args, out: CallCase(name, fn, tuple(args), {}, (out,)),
                  st.text(max_size=4), st.sampled_from(["f", "g"]), st.lists(json_values, max_size=3), json_values)
suites = st.one_of(st.lists(stdio, min_size=1, max_size=5), st.lists(calls, min_size=1, max_size=5)).map(TestSuite)
tasks = st.builds(
    lambda src, suite, cpu, mem, checker, scoring, run_all, prelude, ci: Task(
        "python", src, suite, Limits(cpu_seconds=cpu, memory_bytes=mem), CheckerSpec(checker, case_insensitive=ci),
        scoring, run_all, prelude=prelude, task_id="row:1"),
    st.text(max_size=40), suites, st.sampled_from([1.0, 2.0, 5.0]), st.sampled_from([256 << 20, 512 << 20]),
    st.sampled_from(["tokens", "exact", "tokens_float"]), st.sampled_from(["all_or_nothing", "fraction"]),
    st.booleans(), st.text(max_size=10), st.booleans())


def _case_variants(case) -> list:
    """``case`` changed in each field that can decide its verdict, one at a time."""
    if isinstance(case, StdioCase):
        return [dataclasses.replace(case, name=case.name + "x"), dataclasses.replace(case, stdin=case.stdin + b" "),
                dataclasses.replace(case, expected=case.expected + (b"z",)),
                dataclasses.replace(case, expected=(case.expected[0] + b"\n",) + case.expected[1:])]
    keyed = [dataclasses.replace(case, int_keys=not case.int_keys)] if case.args and isinstance(case.args[0], dict) else []
    return [dataclasses.replace(case, name=case.name + "x"), dataclasses.replace(case, fn_name=case.fn_name + "x"),
            dataclasses.replace(case, args=case.args + (1,)), dataclasses.replace(case, kwargs={"k": 1}),
            dataclasses.replace(case, expected=([case.expected[0]],)),
            dataclasses.replace(case, expected=(case.expected[0], 0)),
            dataclasses.replace(case, node_args=("ListNode",) * len(case.args)),
            dataclasses.replace(case, node_args=(None,) * len(case.args), node_return="TreeNode")] + keyed


def variants(task: Task) -> list[tuple[str, Task]]:
    """``task`` changed in one verdict-deciding field at a time."""
    r = dataclasses.replace
    cases = task.suite.cases
    out = [("source", r(task, source=task.source + " ")), ("prelude", r(task, prelude=task.prelude + "x = 1\n")),
           ("cpu", r(task, limits=task.limits.with_(cpu_seconds=task.limits.cpu_seconds + 0.5))),
           ("wall", r(task, limits=task.limits.with_(wall_seconds=30.0))),
           ("memory", r(task, limits=task.limits.with_(memory_bytes=task.limits.memory_bytes * 2))),
           ("output", r(task, limits=task.limits.with_(output_bytes=1 << 20))),
           ("checker", r(task, checker=r(task.checker, name="pie" if task.checker.name != "pie" else "exact"))),
           ("case", r(task, checker=r(task.checker, case_insensitive=not task.checker.case_insensitive))),
           ("abs_tol", r(task, checker=r(task.checker, abs_tol=task.checker.abs_tol * 10))),
           ("rel_tol", r(task, checker=r(task.checker, rel_tol=task.checker.rel_tol * 10))),
           ("strict_bool", r(task, checker=r(task.checker, strict_bool=not task.checker.strict_bool))),
           ("scoring", r(task, scoring="fraction" if task.scoring == "all_or_nothing" else "all_or_nothing")),
           ("run_all", r(task, run_all=not task.run_all)),
           ("compile", r(task, compile=CompileSpec(timeout_seconds=7.0))),
           ("case dropped", r(task, suite=TestSuite(cases[:-1] or cases + cases))),
           ("cases swapped", r(task, suite=TestSuite(cases[::-1] + (cases[0],)))),
           ("case added", r(task, suite=TestSuite(cases + cases[:1])))]
    for i, case in enumerate(cases):
        for j, changed in enumerate(_case_variants(case)):
            out.append((f"case {i} field {j}", r(task, suite=TestSuite(cases[:i] + (changed,) + cases[i + 1:]))))
    return out


@PROPS
@given(tasks, st.sampled_from(["failures_first", "suite"]))
def test_a_verdict_deciding_change_always_changes_the_key(task, order):
    key = verdict_key(task, case_order=order)
    assert key is not None
    for what, other in variants(task):
        if other.suite.cases == task.suite.cases and other == task:
            continue  # the change was a no-op for this draw
        assert verdict_key(other, case_order=order) != key, what


@PROPS
@given(tasks, st.text(max_size=8), st.text(max_size=8))
def test_label_and_origin_do_not_change_the_key(task, label, origin):
    copy = dataclasses.replace(task, task_id=label,
                               suite=TestSuite(tuple(dataclasses.replace(c) for c in task.suite.cases), origin=origin))
    assert verdict_key(copy) == verdict_key(task)
    assert suite_digest(copy.suite) == suite_digest(task.suite)


@PROPS
@given(tasks)
def test_case_order_is_in_the_key_only_where_it_applies(task):
    first, suite = verdict_key(task, case_order="failures_first"), verdict_key(task, case_order="suite")
    applies = effective_order(task, "failures_first") == "failures_first"
    assert applies == (task.scoring == "all_or_nothing" and not task.run_all)
    assert (first != suite) == applies


def test_values_of_different_types_never_collide():
    """1, 1.0, True, "1", [1], (1,) are different answers to a checker: never one key."""
    values = [1, 1.0, True, "1", [1], (1,), None, 0, False, 0.0, -0.0, [], {}, "", [[1]], {"1": 1}, 2**70, 2.0**70]
    keys = {verdict_key(Task("python", "x", TestSuite([CallCase("c", "f", (), {}, (v,))]))) for v in values}
    assert len(keys) == len(values)


def test_sandbox_configuration_and_language_are_in_the_key(tmp_path):
    task = Task("python", "print(1)", TestSuite([StdioCase("1", "", "1\n")]))
    fake = tmp_path / "python3"
    fake.write_bytes(b"#!/bin/sh\n")
    keys = {verdict_key(task), verdict_key(task, SandboxConfig(python=str(fake))),
            verdict_key(task, SandboxConfig(python_site=())),
            verdict_key(dataclasses.replace(task, language="cpp", source="int main(){}"))}
    assert None not in keys and len(keys) == 4
    fake.write_bytes(b"#!/bin/sh\n# upgraded\n")  # the interpreter changed on disk: a new process sees it
    from arbiter.judge.step import key as key_mod

    key_mod._environment.cache_clear()
    assert verdict_key(task, SandboxConfig(python=str(fake))) not in keys
    bad = dataclasses.replace(task, language="cpp", compile=CompileSpec(command="rm -rf /"))
    assert verdict_key(bad) is None  # an unusable compile command: never reused (it is INVALID_TASK anyway)


def _verdict(outcome: Outcome, n: int = 3) -> Verdict:
    cases = [CaseResult(str(i), Outcome.AC if i < n - 1 else outcome, 0.01, 0.02) for i in range(n)]
    return Verdict(outcome, 1.0 if outcome is Outcome.AC else 0.0, passed=n - 1, total=n, cases=cases,
                   reason="r", seconds=0.5)


@PROPS
@given(tasks, st.sampled_from([Outcome.AC, Outcome.WA, Outcome.TLE, Outcome.RE]))
def test_the_store_answers_only_its_own_key(task, outcome):
    store = VerdictStore()
    key = verdict_key(task)
    store.put(key, _verdict(outcome))
    got = store.get(key)
    assert got is not None and got.cached and dataclasses.replace(got, cached=False) == _verdict(outcome)
    for _, other in variants(task):
        other_key = verdict_key(other)
        if other_key != key:
            assert store.get(other_key) is None


def test_our_failures_are_never_stored(tmp_path):
    store = VerdictStore(disk=DiskStore(tmp_path))
    failed = Verdict(Outcome.SANDBOX_ERROR, 0.0, total=3, reason="sandbox failure: starved of CPU")
    assert not store.put("k" * 64, failed) and store.get("k" * 64) is None and len(store) == 0
    assert not any(tmp_path.rglob("*"))


def test_disk_entries_are_checked_and_bounded_memory_forgets(tmp_path):
    disk = DiskStore(tmp_path)
    VerdictStore(disk=disk).put("a" * 64, _verdict(Outcome.WA))
    assert VerdictStore(disk=disk).get("a" * 64).outcome is Outcome.WA  # a new process reads it back
    path = tmp_path / "aa" / ("a" * 64)
    raw = path.read_bytes()
    path.write_bytes(raw[:-3] + bytes([raw[-3] ^ 1]) + raw[-2:])  # one bit flipped in the payload
    assert VerdictStore(disk=disk).get("a" * 64) is None
    path.write_bytes(raw[: len(raw) // 2])  # torn
    assert VerdictStore(disk=disk).get("a" * 64) is None
    small = VerdictStore(max_bytes=600)
    for i in range(20):
        small.put(f"{i:064d}", _verdict(Outcome.WA, n=5))
    assert 0 < len(small) < 20 and small.get(f"{19:064d}") is not None and small.get(f"{0:064d}") is None


def test_the_limits_regime_is_in_the_key(monkeypatch):
    """Without cgroups memory is limited by RLIMIT_AS: a reserved, untouched mapping is AC under a memory cgroup
    and RE without one. A verdict folder written on one kind of host was reused on the other (red team, December
    2026)."""
    from arbiter.sandbox import sandbox as sandbox_module

    task = Task("python", "print(1)", TestSuite([StdioCase("1", "", "1\n")]))
    monkeypatch.setattr(sandbox_module, "_cgroups_ok", (True, ""))
    with_cgroups = verdict_key(task)
    monkeypatch.setattr(sandbox_module, "_cgroups_ok", (False, "test: a host without cgroups"))
    assert verdict_key(task) != with_cgroups and verdict_key(task) is not None


def test_the_code_digest_covers_the_packages_data_files(tmp_path):
    """``data/sandbox/cpu_online`` (what the sandbox shows programs as the online CPUs) had no suffix the digest
    read: a changed copy of the package kept the digest, so its disk verdicts were reused (red team)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import arbiter

    src = Path(arbiter.__file__).resolve().parent
    digests = []
    for content in (None, "0-63\n"):
        root = tmp_path / f"copy{len(digests)}"
        shutil.copytree(src, root / "arbiter", ignore=shutil.ignore_patterns("__pycache__"))
        if content is not None:
            (root / "arbiter" / "data" / "sandbox" / "cpu_online").write_text(content)
        out = subprocess.run([sys.executable, "-c", "from arbiter.judge.step.key import code_digest; print(code_digest())"],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)}, check=True)
        digests.append(out.stdout.strip())
    assert len(set(digests)) == 2 and all(len(d) == 64 for d in digests), digests
