"""The shipped oracle test generators (``data/oracle/generators/<task_id>.py SEED [SIZE]``) and the
shipped hidden tests: deterministic, valid inputs for each seed task, correct expected outputs.

The generators are trusted repository files, so they run here with a plain subprocess (the
verifier runs them in the sandbox). ``-I -S`` proves they need nothing but the standard library.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data/oracle"
GEN = DATA / "generators"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
TASKS = [json.loads(l)["task_id"] for l in (DATA / "seeds.jsonl").read_text().splitlines() if l.strip()]
SEEDS = [0, 1, 2, 3, 4, 5, 17, 12345]
SIZES = [0, 1, 2]
LARGE_N = {  # documented SIZE=3 scale
    "dummy_pie_cpp_0001_sum_even": 30000,
    "dummy_pie_cpp_0002_prefix_queries": 30000,
    "dummy_pie_cpp_0003_count_pairs": 40000,
    "dummy_pie_cpp_0004_first_repeated": 20000,
    "dummy_pie_cpp_0005_matrix_row_max": 100,
}


def gen(task: str, *args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "-S", str(GEN / f"{task}.py"), *map(str, args)],
                          capture_output=True, timeout=120)


def out(task: str, seed: int, size: int | None = None) -> str:
    p = gen(task, seed) if size is None else gen(task, seed, size)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stderr == b""
    text = p.stdout.decode("ascii")
    assert text.endswith("\n") and not text.endswith("\n\n")
    return text


# --------------------------------------------------------------------------------------------------
# parsers: each checks the format and the constraints the generator docstring promises; they return
# the parsed input and the expected answer (a Python reference of the seed program's behaviour).


def ints(line: str) -> list[int]:
    assert re.fullmatch(r"-?\d+( -?\d+)*", line), line[:80]
    return [int(x) for x in line.split(" ")]


def parse_sum_even(text: str):
    lines = text.split("\n")[:-1]
    assert len(lines) == 2
    (n,) = ints(lines[0])
    a = ints(lines[1])
    assert n >= 1 and len(a) == n
    assert all(abs(x) <= 10**12 for x in a)
    s = sum(x for x in a if x % 2 == 0)
    assert abs(s) < 2**63
    return {"n": n, "a": a}, f"{s}\n"


def parse_prefix_queries(text: str):
    lines = text.split("\n")[:-1]
    n, q = ints(lines[0])
    assert n >= 1 and q >= 1 and len(lines) == 2 + q
    a = ints(lines[1])
    assert len(a) == n and all(abs(x) <= 10**12 for x in a)
    pre = [0]
    for x in a:
        pre.append(pre[-1] + x)
    res = []
    for line in lines[2:]:
        l, r = ints(line)
        assert 1 <= l <= r <= n
        res.append(pre[r] - pre[l - 1])
    return {"n": n, "q": q, "a": a}, "".join(f"{x}\n" for x in res)


def parse_count_pairs(text: str):
    lines = text.split("\n")[:-1]
    assert len(lines) == 2
    n, k = ints(lines[0])
    a = ints(lines[1])
    assert n >= 1 and len(a) == n
    assert all(INT_MIN <= x <= INT_MAX for x in a + [k, n])
    cnt = Counter()
    ans = 0
    for x in a:
        ans += cnt[k - x]
        cnt[x] += 1
    return {"n": n, "k": k, "a": a}, f"{ans}\n"


def parse_first_repeated(text: str):
    lines = text.split("\n")[:-1]
    assert len(lines) == 2
    (n,) = ints(lines[0])
    words = lines[1].split(" ")
    assert n >= 1 and len(words) == n
    assert all(re.fullmatch(r"[a-z]{1,10}", w) for w in words)
    seen, ans = set(), "NONE"
    for w in words:
        if w in seen:
            ans = w
            break
        seen.add(w)
    return {"n": n, "words": words}, f"{ans}\n"


def parse_matrix_row_max(text: str):
    lines = text.split("\n")[:-1]
    n, m = ints(lines[0])
    assert n >= 1 and m >= 1 and len(lines) == 1 + n
    rows = [ints(l) for l in lines[1:]]
    assert all(len(r) == m and all(INT_MIN <= x <= INT_MAX for x in r) for r in rows)
    return {"n": n, "m": m, "rows": rows}, " ".join(str(max(r)) for r in rows) + "\n"


PARSE = {
    "dummy_pie_cpp_0001_sum_even": parse_sum_even,
    "dummy_pie_cpp_0002_prefix_queries": parse_prefix_queries,
    "dummy_pie_cpp_0003_count_pairs": parse_count_pairs,
    "dummy_pie_cpp_0004_first_repeated": parse_first_repeated,
    "dummy_pie_cpp_0005_matrix_row_max": parse_matrix_row_max,
}


def test_one_generator_per_seed_task():
    assert sorted(p.stem for p in GEN.glob("*.py")) == sorted(TASKS)
    for t in TASKS:
        doc = (GEN / f"{t}.py").read_text()
        assert "SIZE" in doc and "random.Random" in doc and "measured" in doc


@pytest.mark.parametrize("task", TASKS)
def test_deterministic_and_valid_for_small_sizes(task):
    outputs = {}
    for size in SIZES:
        for seed in SEEDS:
            text = out(task, seed, size)
            assert out(task, seed, size) == text, (seed, size)  # deterministic
            PARSE[task](text)
            outputs[(seed, size)] = text
    assert out(task, SEEDS[1]) == outputs[(SEEDS[1], 1)]  # SIZE defaults to 1
    for size in (1, 2):  # the seed matters
        assert len({outputs[(s, size)] for s in SEEDS}) == len(SEEDS)


@pytest.mark.parametrize("task", TASKS)
def test_large_size_has_the_documented_scale(task):
    text = out(task, 7, 3)
    assert out(task, 7, 3) == text
    parsed, _ = PARSE[task](text)
    assert parsed["n"] == LARGE_N[task]
    if task.endswith("matrix_row_max"):
        assert parsed["m"] == 3000
    if task.endswith("prefix_queries"):
        assert parsed["q"] == 30000


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("args", [[], ["x"], ["1", "4"], ["1", "-1"], ["1", "2", "3"], ["1.5"]])
def test_bad_arguments_exit_2_without_output(task, args):
    p = gen(task, *args)
    assert p.returncode == 2 and p.stdout == b"" and p.stderr


def test_edge_cases_are_covered():
    # count_pairs: negatives, int limits, duplicates; first_repeated: both outcomes; sum_even: > int
    cp = [parse_count_pairs(out("dummy_pie_cpp_0003_count_pairs", s, z))[0] for s in range(12) for z in (0, 1)]
    vals = [x for p in cp for x in p["a"]]
    assert min(vals) < 0 and INT_MAX in vals and INT_MIN in vals
    assert any(len(set(p["a"])) < len(p["a"]) for p in cp)
    assert any(abs(p["k"]) >= 2**31 - 2 for p in cp)
    answers = {parse_first_repeated(out("dummy_pie_cpp_0004_first_repeated", s, z))[1]
               for s in range(12) for z in (0, 1, 2)}
    assert "NONE\n" in answers and len(answers) > 5
    se = [x for s in range(12) for x in parse_sum_even(out("dummy_pie_cpp_0001_sum_even", s, 0))[0]["a"]]
    assert any(abs(x) > INT_MAX for x in se)
    mx = [parse_matrix_row_max(out("dummy_pie_cpp_0005_matrix_row_max", s, 0))[1] for s in range(12)]
    assert any(str(INT_MIN) in m for m in mx)


# --------------------------------------------------------------------------------------------------
# the seed programs themselves (trusted, compiled on the host): hidden tests and generator inputs


@pytest.fixture(scope="module")
def source_bins(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    d = tmp_path_factory.mktemp("src")
    bins = {}
    for line in (DATA / "seeds.jsonl").read_text().splitlines():
        row = json.loads(line)
        (d / f"{row['task_id']}.cpp").write_text(row["source_code"])
        bins[row["task_id"]] = d / row["task_id"]
    procs = [subprocess.Popen(["g++", "-std=c++20", "-O2", "-pipe", str(d / f"{t}.cpp"), "-o", str(b)])
             for t, b in bins.items()]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    return bins


def run_source(bin_path: Path, stdin: str) -> str:
    p = subprocess.run([str(bin_path)], input=stdin.encode(), capture_output=True, timeout=30)
    assert p.returncode == 0
    return p.stdout.decode()


def test_hidden_tests_are_the_source_programs_outputs(source_bins):
    hidden = json.loads((DATA / "hidden_tests.json").read_text())
    assert set(hidden) == set(TASKS)
    for task, cases in hidden.items():
        assert len(cases) >= 3 and len({c["name"] for c in cases}) == len(cases)
        for c in cases:
            PARSE[task](c["stdin"])  # valid inputs
            assert run_source(source_bins[task], c["stdin"]) == c["stdout"], (task, c["name"])


@pytest.mark.parametrize("task", TASKS)
def test_source_agrees_with_reference_on_generated_inputs(source_bins, task):
    for size in (0, 1, 2):
        for seed in SEEDS[:4]:
            text = out(task, seed, size)
            _, expected = PARSE[task](text)
            assert run_source(source_bins[task], text) == expected, (task, seed, size)
