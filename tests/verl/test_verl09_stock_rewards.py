"""verl 0.9.1's stock code rewards on what ``arbiter convert`` and ``arbiter curate consolidate`` write
(run by the verl venv's python: scripts/verl_venv.sh; from the main venv, test_verl09_venv.py runs this
file there). verl's own ``default_compute_score`` router, without a sandbox URL (``prime_code``, in
process) and with one (``sandbox_fusion``, pointed at a live ``arbiter serve``'s ``/run_code``), on
real converted rows (APPS stdin and call-based, CodeScope, NeMo-Gym with its graded rollouts,
LeetCodeDataset), each held to ``compute_score(parity="prime_code")``: the same first-10-cases
fraction verl's router asks for (``continuous=True``). Every (row, response, reward) that differs is
in :data:`DIFFERENCES` with its reason; every row a stock reward cannot read is in :data:`UNREAD`.
Both are explained in docs/verl.md ("verl's stock code rewards")."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("verl.utils.reward_score", reason="needs verl (the verl venv: scripts/verl_venv.sh; "
                    "test_verl09_venv.py runs these tests there)")

from live_server import LiveServer  # noqa: E402
from verl.utils.reward_score import default_compute_score, prime_code, sandbox_fusion  # noqa: E402

from arbiter.datasets.convert import convert  # noqa: E402
from arbiter.datasets.verl_rows import iter_rows  # noqa: E402
from arbiter.pipelines.goldilocks.consolidate import consolidated_row  # noqa: E402
from arbiter.verl.reward import compute_score  # noqa: E402

SOURCES = {"apps": "coderl_apps", "codescope": "codescope_codeopt/code_optimization_data.jsonl",
           "nemo-gym": "nemo_gym_code_gen/example.jsonl",
           "leetcode": "leetcodedataset/LeetCodeDataset-v0.3.1-test.jsonl.gz"}
#: CodeScope rows judged here (the suite's time budget; tests/server/test_serve_verl.py holds sandbox_fusion to
#: compute_score on more): partial credit of a wrong program, and prime_code's one false fail
CODESCOPE = ("codescope_1", "codescope_21")
LEETCODE_ROWS = 2
PRIME, SANDBOX = "prime_code", "sandbox_fusion"

#: (row key, response, stock reward) -> why the stock reward's score differs from compute_score's
DIFFERENCES = {
    ("codeforces:codescope_21", "reference", PRIME):
        "prime_code runs a stdin program's top level as the body of a function (def code():), so the "
        "names this accepted program's functions declare global are not its own: WA on one of the first 10 cases",
    ("codeforces:nemo_gym_ff86821ed6f7260c7a17c4c9be03b663", "rollout", PRIME):
        "the expected output holds all answers on one line, the program prints one per line: "
        "prime_code compares lines, arbiter (Codeforces' checker) tokens",
    ("codeforces:nemo_gym_ff86821ed6f7260c7a17c4c9be03b663", "rollout", SANDBOX):
        "the same one-line expected output: sandbox_fusion compares the whole text exactly",
    ("codeforces:nemo_gym_c69268d8bdb4da0685d7b187c88296c1", "rollout", SANDBOX):
        "the expected output has an empty line and trailing spaces the program does not print: "
        "sandbox_fusion compares the text exactly (only trailing newlines dropped)",
}
#: data_source -> why verl's router refuses it (NotImplementedError): it knows exactly
#: codecontests, apps, codeforces and taco among code sources
UNREAD = {
    "leetcode": "function-call rows with a prelude: not a name verl routes",
    "code_apps": "curate consolidate's name for apps rows (the card's code_ prefix): not a name verl routes",
}


def fence(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code}\n```\n"


def wrong(ground_truth: str) -> str:
    truth = json.loads(ground_truth)
    name = truth.get("fn_name") if isinstance(truth, dict) else truth[0]["fn_name"]
    if name is None:
        return fence("print(input())")
    return fence(f"class Solution:\n    def {name}(self, *args):\n        return None\n\n\n"
                 f"def {name}(*args):\n    return None")


@pytest.fixture(scope="module")
def items(shared, tmp_path_factory):
    """(row, response kind, response): references and wrong programs, and NeMo-Gym's rollouts."""
    out = tmp_path_factory.mktemp("stock")
    rows = {}
    for source, rel in SOURCES.items():
        report = convert(source, shared / "realdata" / rel, out / f"{source}.parquet")
        assert report.bad == []
        rows[source] = list(iter_rows(out / f"{source}.parquet"))
    rows["codescope"] = [r for r in rows["codescope"] if r.extra_info["index"] in CODESCOPE]
    rows["leetcode"] = rows["leetcode"][:LEETCODE_ROWS]
    picked = []
    for source in ("apps", "codescope", "leetcode"):
        for row in rows[source]:
            picked += [(row, "reference", fence(row.extra_info["reference_solutions"][0])),
                       (row, "wrong", wrong(row.ground_truth))]
    by_prompt = {r.prompt[0].content: r for r in rows["nemo-gym"]}
    for line in (shared / "realdata" / "nemo_gym_code_gen" / "example_rollouts.jsonl").read_text().splitlines():
        rollout = json.loads(line)
        text = "".join(part["text"] for o in rollout["response"]["output"] if o.get("type") == "message"
                       for part in o["content"] if "text" in part)
        picked.append((by_prompt[rollout["responses_create_params"]["input"][0]["content"]], "rollout", text))
    return picked


def stock(data_source, text, ground_truth, extra_info, **sandbox) -> float | str:
    """verl's router as its reward loop calls it; ``"NotImplementedError"`` when it refuses the row."""
    try:
        result = default_compute_score(data_source, text, ground_truth, extra_info, **sandbox)
    except NotImplementedError:
        return "NotImplementedError"
    return float(result["score"] if isinstance(result, dict) else result)


@pytest.fixture(scope="module")
def sandbox():
    """verl's sandbox_fusion settings, pointed at a live ``arbiter serve``."""
    server = LiveServer()
    yield {"sandbox_fusion_url": server.url + "/run_code", "concurrent_semaphore": threading.Semaphore(8),
           "memory_limit_mb": 1024}
    assert server.stop() == 0


def test_verl_stock_code_rewards_score_converted_rows_as_compute_score(items, sandbox):

    def both(item):
        row, kind, text = item
        args = (row.data_source, text, row.ground_truth, row.extra_info)
        ours = compute_score(*args, parity="prime_code")["score"]
        return row.key, kind, ours, {PRIME: stock(*args), SANDBOX: stock(*args, **sandbox)}

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(both, items))
    print("\nrow | response | compute_score(parity=prime_code) | verl prime_code | verl sandbox_fusion")
    for key, kind, ours, theirs in results:
        print(f"{key} | {kind} | {ours:g} | {theirs[PRIME]} | {theirs[SANDBOX]}")
    refused = {(key, kind): theirs for key, kind, _, theirs in results if key.split(":")[0] in UNREAD}
    assert refused and all(t == {PRIME: "NotImplementedError", SANDBOX: "NotImplementedError"} for t in refused.values())
    differ = {(key, kind, reward): (score, ours) for key, kind, ours, theirs in results if key.split(":")[0] not in UNREAD
              for reward, score in theirs.items() if score != ours}
    assert set(differ) == set(DIFFERENCES), json.dumps({" | ".join(k): v for k, v in differ.items()}, indent=1)
    # the call-based APPS row (JSON-line arguments, prime_code's shape) is read by both stock rewards
    assert [t for key, kind, _, t in results if key == "apps:apps_train_2404" and kind == "reference"] == \
        [{PRIME: 1.0, SANDBOX: 1.0}]
    assert sum(1 for _, kind, ours, t in results if kind == "reference" and t[PRIME] == t[SANDBOX] == ours == 1.0) >= 4


def test_rows_verl_cannot_route_or_read_are_refused_or_scored_zero_and_said_so(items):
    """The router refuses leetcode and the consolidated code_* names (a loud NotImplementedError);
    called directly, the stock scorers cannot read a function_call list (every response 0)."""
    apps = next(row for row, kind, _ in items if row.key == "apps:apps_train_0001" and kind == "reference")
    final = consolidated_row(apps.model_dump(), {"lower_pass_rate": 0.0, "upper_pass_rate": 1.0, "lower_scores": [0.0],
                                                 "upper_scores": [1.0]}, "cco_0")
    assert final["data_source"] in UNREAD
    reference = fence(apps.extra_info["reference_solutions"][0])
    assert stock(final["data_source"], reference, apps.ground_truth, apps.extra_info) == "NotImplementedError"
    assert compute_score(final["data_source"], reference, apps.ground_truth, apps.extra_info)["score"] == 1.0
    lc, _, text = next(item for item in items if item[0].data_source == "leetcode" and item[1] == "reference")
    assert compute_score(lc.data_source, text, lc.ground_truth, lc.extra_info)["score"] == 1.0
    assert isinstance(json.loads(lc.ground_truth), list)  # the card's function_call encoding
    score, meta = sandbox_fusion.compute_score("http://127.0.0.1:9/run_code", None, 1024, text, lc.ground_truth)
    assert score == 0.0 and "Invalid test_cases structure" in meta[0]["error"]
    assert not prime_code.compute_score(text, lc.ground_truth, continuous=True)[0]


#: TACO call-based rows (HF BAAI/TACO's shape): a wrapped int output, a str return value, a bare int
TACO_CALLS = [
    {"question": "Return n squared.", "solutions": json.dumps(["def sq(n):\n    return n * n"]),
     "input_output": json.dumps({"fn_name": "sq", "inputs": [[3], [4]], "outputs": [[9], [16]]}), "name": "wrapped"},
    {"question": "Join two words.", "solutions": json.dumps(["def join(a, b):\n    return a + b"]),
     "input_output": json.dumps({"fn_name": "join", "inputs": [["ab", "c"]], "outputs": ["abc"]}), "name": "text"},
    {"question": "Append b to a.", "solutions": json.dumps(["class Solution:\n    def push(self, a, b):\n        return a + [b]"]),
     "input_output": json.dumps({"fn_name": "push", "inputs": [[[1, 2], 3]], "outputs": [[1, 2, 3]]}), "name": "list"},
]


def test_call_based_taco_rows_under_the_stock_scorers(tmp_path, sandbox):
    """prime_code reads every converted call-based row as arbiter does; sandbox_fusion compares the
    printed return value as text, so it fails a correct function whose output TACO stores wrapped
    or whose return value is a string (docs/verl.md)."""
    src = tmp_path / "taco.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in TACO_CALLS))
    assert convert("taco", src, tmp_path / "rows.jsonl").written == 3
    got = {}
    for row in iter_rows(tmp_path / "rows.jsonl"):
        args = (row.data_source, fence(row.extra_info["reference_solutions"][0]), row.ground_truth, row.extra_info)
        got[row.extra_info["id"]] = (compute_score(*args)["score"], stock(*args), stock(*args, **sandbox))
    assert got == {"wrapped": (1.0, 1.0, 0.0), "text": (1.0, 1.0, 0.0), "list": (1.0, 1.0, 1.0)}, got
