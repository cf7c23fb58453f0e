"""verl's own sandbox_fusion reward code (the installed ``verl`` package's module, loaded by path so
that verl's torch-importing package root is not needed) scoring real rows through ``arbiter serve``'s
``/run_code``, against arbiter's ``compute_score`` (``parity="prime_code"``: the same first-10-cases
fraction verl computes). Every row where verl's client-side comparison differs from arbiter's
verdict is listed in :data:`DIFFERENCES` and explained in docs/serve.md. ``compute_score(url=)``
gives the in-process results on every row."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest
from live_server import LiveServer

from arbiter.datasets.convert import convert
from arbiter.datasets.verl_rows import iter_rows
from arbiter.verl.reward import compute_score

SOURCES = {"apps": "coderl_apps", "codescope": "codescope_codeopt/code_optimization_data.jsonl",
           "nemo-gym": "nemo_gym_code_gen/example.jsonl"}
WRONG = "print(input())"  # echoes the first input line: wrong on nearly every case
#: The reference with a space before every line break of its output: right by the token checker
#: (arbiter's default for these cards), wrong by verl's exact compare.
TRAILING_SPACE = """import atexit, io, sys
_out, _real = io.StringIO(), sys.stdout
sys.stdout = _out
atexit.register(lambda: _real.write("".join(l.rstrip("\\n") + " \\n" for l in _out.getvalue().splitlines(True))))
"""

#: (row, response) -> why verl's exact compare (after rstrip("\n") of both sides) disagrees with
#: arbiter's token checker (explained in docs/serve.md, "verl's own comparison").
TRAILING = "a space before every line break: arbiter's token checker accepts it, verl's exact compare does not"
DIFFERENCES: dict[tuple[str, str], str] = {
    ("apps:apps_train_0001", "trailing_space"): TRAILING,
    ("codeforces:codescope_11", "trailing_space"): TRAILING,
    ("codeforces:codescope_18", "trailing_space"): TRAILING,
    ("codeforces:codescope_22", "trailing_space"): TRAILING,
    ("codeforces:codescope_27", "trailing_space"): TRAILING,
    ("codeforces:codescope_30", "trailing_space"): TRAILING,
    ("codeforces:codescope_4", "trailing_space"): TRAILING,
    ("codeforces:codescope_7", "trailing_space"): TRAILING,
}


def _verl_package_dirs() -> list[Path]:
    """Where an installed verl package is: this interpreter's distribution, else the verl 0.9.1
    venv that ``make test`` builds (scripts/verl_venv.sh, ``ARBITER_VERL_VENV``)."""
    import importlib.metadata as md
    dirs = []
    try:
        dist = md.distribution("verl")
        dirs.append(Path(dist.locate_file("verl")))
    except md.PackageNotFoundError:
        pass
    venv = Path(os.environ.get("ARBITER_VERL_VENV", Path.home() / ".cache" / "arbiter" / "verl-0.9.1"))
    dirs += sorted(venv.glob("lib/python3*/site-packages/verl"))
    return dirs


def _verl_sandbox_fusion():
    folders = [d / "utils" / "reward_score" / "sandbox_fusion" for d in _verl_package_dirs()]
    folders = [f for f in folders if (f / "__init__.py").is_file()]
    if not folders:
        pytest.skip("verl is not installed here nor in the verl venv (scripts/verl_venv.sh)")
    folder = folders[0]
    name = "verl_sandbox_fusion_by_path"
    mod_spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[name] = module
    mod_spec.loader.exec_module(module)
    return module


def fence(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code}\n```\n"


@pytest.fixture(scope="module")
def rows(shared, tmp_path_factory):
    out = tmp_path_factory.mktemp("serve_realdata")
    picked = []
    for source, rel in SOURCES.items():
        convert(source, shared / "realdata" / rel, out / f"{source}.parquet")
        for row in iter_rows(out / f"{source}.parquet"):
            # every row in verl's {inputs, outputs[, fn_name]} form (docs/verl.md, "verl's stock code
            # rewards"); the stdin rows here (call rows: tests/verl/test_verl09_stock_rewards.py)
            cases = json.loads(row.ground_truth)
            assert isinstance(cases, dict), row.key
            if "fn_name" not in cases:
                picked.append(row)
    return picked


def responses(row, i: int) -> dict[str, str]:
    """On every third row (the suite's time budget): its reference, a wrong program and the
    reference's trailing-space variant."""
    if i % 3:
        return {}
    refs = [r for r in (row.extra_info.get("reference_solutions") or []) if isinstance(r, str)]
    out = {"wrong": fence(WRONG)}
    if refs:
        out["reference"] = fence(refs[0])
        out["trailing_space"] = fence(TRAILING_SPACE + refs[0])
    return out


@pytest.fixture(scope="module")
def server():
    s = LiveServer()
    yield s
    assert s.stop() == 0


#: verl's documented settings: ``max_concurrent: 64`` per reward worker, 8 reward workers.
VERL_WORKERS, VERL_MAX_CONCURRENT, VERL_SAMPLES_AT_ONCE = 8, 64, 16


def _verl_worker(job) -> list:
    """One verl reward worker (its own process): its samples scored at once by verl's own
    sandbox_fusion ``compute_score``, at most ``max_concurrent`` requests in flight."""
    url, items = job
    sf = sys.modules["verl_sandbox_fusion_by_path"]
    semaphore = threading.Semaphore(VERL_MAX_CONCURRENT)

    def one(item):
        index, truth, text = item
        score, meta = sf.compute_score(url + "/run_code", semaphore, 1024, text, truth, continuous=True)
        return index, float(score), [m.get("api_request_error") for m in meta if isinstance(m, dict)]

    with ThreadPoolExecutor(max_workers=VERL_SAMPLES_AT_ONCE) as pool:
        return list(pool.map(one, items))


def test_verl_sandbox_fusion_at_its_documented_concurrency_agrees_with_arbiter(server, rows):
    """8 reward workers x max_concurrent 64 (up to 512 requests at once) against the server's
    defaults: none is refused into a lower score; every score is arbiter's but the listed ones."""
    _verl_sandbox_fusion()
    items = [(row, kind, text) for row in rows for kind, text in responses(row, 0).items()]  # every row
    assert len(rows) >= 20 and any(kind == "reference" for _, kind, _ in items)
    jobs = [(server.url, [(j, items[j][0].ground_truth, items[j][2])
                          for j in range(w, len(items), VERL_WORKERS)]) for w in range(VERL_WORKERS)]
    with ProcessPoolExecutor(VERL_WORKERS, mp_context=multiprocessing.get_context("fork")) as pool:
        scored = {index: (verl, errors) for part in pool.map(_verl_worker, jobs) for index, verl, errors in part}
    errors = [e for _, errs in scored.values() for e in errs if e]
    assert not errors, f"verl saw {len(errors)} API errors (a refusal is a lower score): {errors[:3]}"

    def ours(item):
        row, kind, text = item
        return compute_score(row.data_source, text, row.ground_truth, row.extra_info, parity="prime_code")

    with ThreadPoolExecutor(max_workers=2) as pool:
        native = list(pool.map(ours, items))
    differ = {(f"{row.data_source}:{row.extra_info['index']}", kind): (scored[j][0], mine["score"], mine["reason"])
              for j, ((row, kind, _), mine) in enumerate(zip(items, native)) if abs(scored[j][0] - mine["score"]) > 1e-9}
    # every row: the trailing-space variants differ (DIFFERENCES lists every third row's), nothing else
    other = {f"{k[0]}|{k[1]}": v for k, v in differ.items() if k[1] != "trailing_space" or v[0] > v[1]}
    assert not other and set(DIFFERENCES) <= set(differ), json.dumps(other, indent=1)
    assert sum(1 for j, (_, kind, _) in enumerate(items) if kind == "reference" and scored[j][0] == 1.0) >= 5
    m = server.metrics()  # held past hold_seconds (then retried into its place) at most, never refused
    assert not any(k.startswith("arbiter_refused_total") and "queue" in k and v for k, v in m.items()), m


def test_compute_score_url_gives_in_process_results_on_every_row(server, rows):
    items = [(row, text) for i, row in enumerate(rows) for k, text in responses(row, i).items() if k != "trailing_space"]
    keys = ("score", "verdict", "passed", "total")

    def pair(item):
        row, text = item
        args = (row.data_source, text, row.ground_truth, row.extra_info)
        local, remote = compute_score(*args), compute_score(*args, url=server.url)
        return [local[k] for k in keys], [remote[k] for k in keys]

    with ThreadPoolExecutor(max_workers=2) as pool:
        pairs = list(pool.map(pair, items))
    assert [p[1] for p in pairs] == [p[0] for p in pairs]


def test_compute_score_url_takes_every_value_a_trainer_puts_in_extra_info(server, rows):
    """verl's agent loop adds numpy ``num_turns``; loaders hand numpy arrays, bytes and nested
    dicts: ``url=`` sends them all and gives what the in-process call gives."""
    import numpy as np

    from arbiter.verl.reward import compute_score_batch

    row = next(r for r in rows if r.extra_info.get("reference_solutions"))
    extra = {**row.extra_info, "num_turns": np.int64(2), "rollout_reward_scores": {}, "ids": np.arange(3),
             "tool_extra_fields": {"raw": b"\x00\xff", "turns": [np.float32(0.5)], "$ref": (1, 2)},
             "index": np.str_(row.extra_info["index"]), "time_limit": np.float64(5.0)}
    items = [(np.str_(row.data_source), fence(text), row.ground_truth, extra)
             for text in (row.extra_info["reference_solutions"][0], WRONG)]
    keys = ("score", "verdict", "passed", "total", "reason", "warning")
    local = [compute_score(*it) for it in items]
    remote = [compute_score(*it, url=server.url) for it in items]
    assert [[r[k] for k in keys] for r in remote] == [[r[k] for k in keys] for r in local]
    assert [r["score"] for r in local] == [1.0, 0.0]
    batch = compute_score_batch(*zip(*items), url=server.url)
    assert [[r[k] for k in keys] for r in batch] == [[r[k] for k in keys] for r in local]
