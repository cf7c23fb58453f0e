"""Parsers of untrusted text on adversarial shapes, and the judge process's memory on huge inputs
(issue 19, items 2-4).

1. Parse time of each parser of untrusted text on adversarial shapes (long whitespace runs, many
   fences, deep nesting, long integers) at 64 KB and 1 MB, side by side, with the ratio
   (a linear parser takes about 16x longer on the 16x larger input):
   - responses: ``arbiter.rewards.extract.extract_code``;
   - oracle answers: ``arbiter.pipelines.oracle_format.parse_answer``;
   - ground truths: ``arbiter.judge.jsonvalues.loads``,
     ``arbiter.judge.encodings.pyliteral.parse_literal`` and
     ``arbiter.judge.encodings.verl_ground_truth_to_suite``;
   - problem statements: the goldilocks English filter's fence and wrapper removal, and
     ``convert``'s several-answers warning (``arbiter.datasets.several_answers``).
2. The judge process's peak RSS above its start (VmHWM after ``clear_refs``) and wall time for
   - item 3: a function returning ``[[]] * 15_000_000`` (60 MB of JSON, under the 64 MiB cap);
   - item 4: ``compute_score`` on a 50 MB response of 2.6 M small fences;
   - item 3, stdout: a 63 MiB stdout of 2-byte tokens through every text checker, against a
     2-byte answer (the first token differs) and against a 63 MiB answer whose last line differs
     (the whole output is compared); a list of all its tokens or lines took 0.9-1.3 GB.
3. The time of every text checker on a typical 1 MB output (71k lines ``"i i.5"``): accepted
   with a trailing space on every line, and wrong in its last number (the best of 5 runs).

Every measurement runs in a forked child with a wall limit (``--timeout``, default 60 s), so a
quadratic parser shows as ``>60s`` instead of stopping the bench. To compare with another
checkout, run the same file with its sources first on the path:
``PYTHONPATH=/path/to/other/src .venv/bin/python bench/parse.py``.

Usage: .venv/bin/python bench/parse.py [--timeout 60] [--skip-judge] [--checkers-only]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time

KB64, MB1 = 64 * 1024, 1024 * 1024


# ---------------------------------------------------------------- shapes (about n characters)

def response_shapes(n: int) -> dict[str, str]:
    k = int((2 * n) ** 0.5) // 2 + 3
    depth, lst = 0, []
    while sum(map(len, lst)) < n:
        lst.append(" " * depth + "- ```python\n" + " " * depth + "  x\n" + " " * depth + "  ```\n")
        depth += 2
    return {
        "spaces then a` ``` (issue)": "```python\n" + " " * n + "a` ```",
        "spaces then x``` inline": "```python\nx = 1\n" + " " * n + "x```",
        "many small fences": "```\nx\n```\n" * (n // 10),
        "many fence lines": "```\n" * (n // 4),
        "inline-close candidates": "```python\n" + "a```\n" * (n // 5),
        "one backtick run": "```python\n" + "`" * n,
        "nested fences": "".join("`" * i + "python\n" for i in range(k, 2, -1)) + "print(1)\n"
                         + "".join("`" * i + "\n" for i in range(3, k + 1)),
        "deep list indentation": "".join(lst),
        "think tags": "</think>" * (n // 8),
        "newlines": "```python\n" + "\n" * n,
    }


def oracle_shapes(n: int) -> dict[str, str]:
    head = "<reasoning>r</reasoning>\n"
    return {
        "spaces before the fence": head + " " * n + "```cpp\nint main(){}\n```\n",
        "spaces in code lines": head + "```cpp\n" + (" " * 200 + "x\n") * (n // 202) + "```\n",
        "many fences": head + "```cpp\nx\n```\n" * (n // 14),
        "many line-start fences, no close": head + "```cpp\n" + "   ``\n" * (n // 6),
        "many <reasoning> tags": "<reasoning>" * (n // 11),
        "unclosed reasoning + fences": "<reasoning>" + "```\n" * (n // 4),
        "text with backticks": head + "` " * (n // 2),
    }


def ground_truth_shapes(n: int) -> dict[str, tuple[str, str]]:
    long_int = "1" * 4300 + ","
    return {
        "json: deep nesting": ("json", "[" * (n // 2) + "]" * (n // 2)),
        "json: wide list": ("json", "[" + "[]," * (n // 3) + "[]]"),
        "json: 4300-digit ints": ("json", "[" + long_int * (n // len(long_int)) + "1]"),
        "literal: 4300-digit ints": ("literal", "[" + long_int * (n // len(long_int)) + "1]"),
        "literal: deep nesting": ("literal", "[" * (n // 2) + "]" * (n // 2)),
        "literal: + chain": ("literal", "[0]" + " + [0]" * ((n - 3) // 6)),
        "literal: spaces": ("literal", "[" + " " * n + "1]"),
        "verl: many cases": ("verl", json.dumps({"inputs": ["1\n"] * (n // 12), "outputs": ["1\n"] * (n // 12)})),
    }


def statement_shapes(n: int) -> dict[str, str]:
    return {
        "backtick run, no newline": "`" * n,
        "many fenced blocks": "```\nx\n```\n" * (n // 10),
        "wrapper sentence prefixes": "Solve the following coding problem using the programming language " * (n // 66),
    }


def several_answers_shapes(n: int) -> dict[str, str]:
    """Statements for ``convert``'s several-answers warning: one long sentence each."""
    return {
        "answer verbs, no 'any order'": "return " * (n // 7),
        "'multiple answers', no 'any'": "multiple answers " * (n // 17),
    }


# ---------------------------------------------------------------- measurement in a child

def _child(conn, fn_name: str, args: tuple) -> None:
    try:
        fn = globals()[fn_name]
        conn.send(fn(*args))
    except BaseException as exc:  # report, never hang the parent
        conn.send({"error": f"{type(exc).__name__}: {exc}"})


def in_child(fn_name: str, *args, timeout: float) -> dict:
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(child, fn_name, args))
    p.start()
    child.close()
    if parent.poll(timeout):
        out = parent.recv()
        p.join()
        return out
    p.kill()
    p.join()
    return {"timeout": timeout}


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> int:
    """Reset VmHWM to the current RSS (Linux ``clear_refs`` 5); returns that RSS."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _status("VmRSS")


def parse_one(kind: str, shape: str, n: int) -> dict:
    if kind == "response":
        from arbiter.rewards.extract import extract_code
        text = response_shapes(n)[shape]
        fn = extract_code
    elif kind == "oracle":
        from arbiter.pipelines.oracle.format import parse_answer
        text = oracle_shapes(n)[shape]
        fn = parse_answer
    elif kind == "statement":
        from arbiter.pipelines.goldilocks.english import _outside_code_and_wrappers as fn
        text = statement_shapes(n)[shape]
    elif kind == "several":
        from arbiter.datasets.several_answers import several_answers_sentence as fn
        text = several_answers_shapes(n)[shape]
    else:
        how, text = ground_truth_shapes(n)[shape]
        if how == "json":
            from arbiter.judge.jsonvalues import loads as fn
        elif how == "literal":
            from arbiter.judge.encodings.pyliteral import parse_literal as fn
        else:
            from arbiter.judge.encodings import verl_ground_truth_to_suite

            def fn(t):
                return verl_ground_truth_to_suite(t, row="bench")
    base = _reset_peak()
    t = time.perf_counter()
    try:
        fn(text)
        err = ""
    except Exception as exc:  # a refused ground truth is a result too
        err = type(exc).__name__
    return {"seconds": time.perf_counter() - t, "peak": _status("VmHWM") - base, "error": err}


def judge_item3() -> dict:
    from arbiter.judge.judge import judge
    from arbiter.judge.task import Task
    from arbiter.judge.testsuite import CallCase, TestSuite

    task = Task(language="python", source="def f():\n    return [[]] * 15_000_000\n",
                suite=TestSuite((CallCase("c1", "f", (), {}, ([[1]],)),)))
    base = _reset_peak()
    t = time.perf_counter()
    v = judge(task)
    return {"seconds": time.perf_counter() - t, "peak": _status("VmHWM") - base, "verdict": v.outcome.value,
            "reason": v.reason[:150]}


def score_item4() -> dict:
    from arbiter.verl.reward import compute_score

    response = "```\nprint(x+1)\n```\n" * 2_600_000 + "```python\nprint(3)\n```\n"  # 49.4 MB
    base = _reset_peak()
    t = time.perf_counter()
    r = compute_score("code_taco", response, {"inputs": ["\n"], "outputs": ["3\n"]})
    return {"seconds": time.perf_counter() - t, "peak": _status("VmHWM") - base, "verdict": r["verdict"],
            "reason": r["reason"][:150], "chars": len(response)}


TEXT_CHECKERS = ("exact", "trailing_whitespace", "pie", "tokens", "tokens_float")


def checker_stdout(name: str, shape: str) -> dict:
    """A 63 MiB stdout of 2-byte tokens checked by the ``name`` checker in the judge process:
    against a 2-byte answer (``first``) or a 63 MiB one whose last line differs (``last``)."""
    from arbiter.checkers.compare import check_output
    from arbiter.checkers.spec import CheckerSpec

    out = b"ab\n" * (21 * 1024 * 1024)
    want = b"b\n" if shape == "first" else out + b"y\n"
    if shape == "last":
        out += b"x\n"
    base = _reset_peak()
    t = time.perf_counter()
    r = check_output(CheckerSpec(name), out, (want,))
    return {"seconds": time.perf_counter() - t, "peak": _status("VmHWM") - base,
            "verdict": "AC" if r.ok else "WA", "reason": r.diff[:100]}


def checker_typical(name: str) -> dict:
    """Best-of-5 times of the ``name`` checker on a typical 1 MB output: accepted with a trailing
    space on every line (``exact``: wrong at line 1), and wrong in its last number."""
    from arbiter.checkers.compare import check_output
    from arbiter.checkers.spec import CheckerSpec

    want = b"".join(b"%d %d.5\n" % (i, i) for i in range(1_000_000 // 14))
    shapes = {"trailing spaces": want.replace(b"\n", b" \n"), "last number wrong": want[:-3] + b"6\n"}
    out = {}
    for shape, got in shapes.items():
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            r = check_output(CheckerSpec(name), got, (want,))
            best = min(best, time.perf_counter() - t)
        out[shape] = (best, "AC" if r.ok else "WA")
    return out


def _fmt(r: dict) -> str:
    if "timeout" in r:
        return f">{r['timeout']:.0f}s".rjust(10)
    if "seconds" not in r:
        return "error".rjust(10)
    return f"{r['seconds']:9.4f}s"


def _print_judge(name: str, r: dict) -> None:
    if "seconds" in r:
        print(f"  {name:48} {r['seconds']:7.2f}s  peak {r['peak'] / 2**20:8.1f} MB  {r['verdict']}: "
              f"{r['reason']}", flush=True)
    else:
        print(f"  {name:48} {r}", flush=True)


def parse_times(timeout: float) -> None:
    print(f"\n{'parser':9} {'shape':34} {'64 KB':>10} {'1 MB':>10} {'ratio':>6} {'1 MB peak':>10}")
    for kind, shapes in (("response", response_shapes(16)), ("oracle", oracle_shapes(16)),
                         ("truth", ground_truth_shapes(16)), ("statement", statement_shapes(16)),
                         ("several", several_answers_shapes(16))):
        for shape in shapes:
            small = in_child("parse_one", kind, shape, KB64, timeout=timeout)
            big = in_child("parse_one", kind, shape, MB1, timeout=timeout)
            ratio = (f"{big['seconds'] / small['seconds']:6.1f}" if "seconds" in small and "seconds" in big
                     and small["seconds"] > 0 else "     -")
            peak = f"{big['peak'] / 2**20:8.1f}MB" if "peak" in big else "         -"
            note = f"  ({big.get('error') or small.get('error')})" if big.get("error") or small.get("error") else ""
            print(f"{kind:9} {shape:34} {_fmt(small)} {_fmt(big)} {ratio} {peak}{note}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=60.0, help="wall seconds per measurement")
    ap.add_argument("--skip-judge", action="store_true", help="only the parse times")
    ap.add_argument("--checkers-only", action="store_true", help="only the stdout checkers")
    a = ap.parse_args()
    import arbiter

    print(f"arbiter from {os.path.dirname(arbiter.__file__)}; python {sys.version.split()[0]}")
    if not a.checkers_only:
        parse_times(a.timeout)
    if not a.skip_judge and not a.checkers_only:
        print("\njudge process (peak RSS above its start, VmHWM):")
        for name, fn in (("item 3: return [[]] * 15_000_000 (60 MB JSON)", "judge_item3"),
                         ("item 4: compute_score, 50 MB of 2.6 M fences", "score_item4")):
            _print_judge(name, in_child(fn, timeout=max(a.timeout, 300)))
    if not a.skip_judge:
        print("\nitem 3, stdout checkers on 63 MiB of 2-byte tokens (peak RSS above the start, VmHWM):")
        for shape, what in (("first", "vs 2-byte answer"), ("last", "vs 63 MiB, last line differs")):
            for name in TEXT_CHECKERS:
                _print_judge(f"{name} {what}", in_child("checker_stdout", name, shape, timeout=max(a.timeout, 300)))
    print("\nstdout checkers on a typical 1 MB output (best of 5):")
    for name in TEXT_CHECKERS:
        r = in_child("checker_typical", name, timeout=a.timeout)
        cells = "  ".join(f"{shape} {sec * 1000:6.1f} ms ({v})" for shape, (sec, v) in r.items()) if "error" not in r \
            and "timeout" not in r else str(r)
        print(f"  {name:20} {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
