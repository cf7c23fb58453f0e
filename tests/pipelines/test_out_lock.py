"""One run per output folder (issue 19, item 14): every command that writes an output folder locks it
(``flock`` on ``<folder>/.arbiter.lock``, held for the whole run); a second run exits 2 naming the folder.

The holder is a real ``arbiter oracle generate`` process whose model endpoint (the fake OpenAI server of
``oracle_fake_server``) does not answer until the test says so: it has locked ``--out`` and is waiting on
its first request, so the tests know it holds the lock without any sleep or timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from oracle_fake_server import FakeOpenAIServer, Script  # noqa: E402
from test_codegen_scoring import SUM, SUM_OK, row, write_jsonl  # noqa: E402
from test_pie_retime import FAST, SLOW, write_problem  # noqa: E402

from arbiter.datasets.io import read_jsonl
from arbiter.pipelines.outputs import LOCK_NAME, OutputDirBusy, ensure_out_dir, holds_out_dirs, lock_out_dir

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data/oracle"
ARBITER = [sys.executable, "-m", "arbiter.cli.main"]
KEY = "sk-lock-test"
SEED_LINE = (DATA / "seeds.jsonl").read_text().splitlines()[0]
TASK = json.loads(SEED_LINE)["task_id"]
# a return row for that task that is rejected at the format stage: verified in a moment, nothing compiled
FORMAT_FAIL = next(line for line in (DATA / "returns.jsonl").read_text().splitlines()
                   if json.loads(line)["task_id"] == TASK and '"demo_id": "fmt-' in line)


def arbiter(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*ARBITER, *args], capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env=dict(os.environ, COLUMNS="250"))


def said(p: subprocess.CompletedProcess) -> str:
    return " ".join((p.stdout + p.stderr).split())  # rich wraps long lines


class Holder:
    """A running ``arbiter oracle generate --out folder`` blocked inside its first model request."""

    def __init__(self, root: Path):
        self.root = root
        self.folder = root / "held"
        self.asked, self.release = threading.Event(), threading.Event()
        seeds = self.seeds = root / "one_seed.jsonl"
        seeds.write_text(SEED_LINE + "\n")
        answer = json.loads(FORMAT_FAIL)["messages"][-1]["content"]

        def match(messages) -> bool:  # runs inside the server: hold the request until released
            self.asked.set()
            self.release.wait(600)
            return True

        self.server = FakeOpenAIServer([Script("held", match, completions=[answer])], api_key=KEY).start()
        self.proc = subprocess.Popen(
            [*ARBITER, "oracle", "generate", "--seeds", str(seeds), "--out", str(self.folder), "--model", "fake-model",
             "--n", "1", "--no-progress", "--base-url", self.server.base_url],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, OPENAI_API_KEY=KEY, COLUMNS="250"))
        # the first request is sent after --out is locked; a holder that failed before that never asks
        while not self.asked.wait(1):
            assert self.proc.poll() is None, self.proc.communicate()

    def finish(self) -> tuple[int, str]:
        self.release.set()
        out, err = self.proc.communicate(timeout=600)
        self.server.stop()
        return self.proc.returncode, out + err


@pytest.fixture()
def holder(tmp_path):
    h = Holder(tmp_path)
    yield h
    if h.proc.poll() is None:
        h.proc.kill()
    h.release.set()
    h.proc.wait()
    h.server.stop()


def refused(p: subprocess.CompletedProcess, folder: Path, holder: Holder) -> None:
    text = said(p)
    assert p.returncode == 2, text
    assert f"--out {folder} is in use by another arbiter run" in text, text
    assert f"pid {holder.proc.pid}" in text and "oracle generate" in text, text
    assert "Traceback" not in text


def test_every_command_refuses_a_folder_another_run_is_writing(holder, tmp_path):
    folder = holder.folder
    assert (folder / LOCK_NAME).is_file()
    # oracle verify: the case (two runs on one --out wrote 14 sft rows for 7 keys)
    returns = tmp_path / "returns.jsonl"
    returns.write_text(FORMAT_FAIL + "\n")
    verify = ["oracle", "verify", "--seeds", str(holder.seeds), "--returns", str(returns), "--out",
              str(folder), "--no-progress"]
    refused(arbiter(*verify), folder, holder)
    # arbiter score
    dataset = write_jsonl(tmp_path / "rows.jsonl", [row("code_taco", "t0", SUM)])
    completions = write_jsonl(tmp_path / "c.jsonl", [{"index": "t0", "responses": [SUM_OK]}])
    refused(arbiter("score", "--dataset", str(dataset), "--completions", str(completions), "--out", str(folder),
                    "--quiet"), folder, holder)
    # arbiter pie reward (refused before anything is compiled)
    tests = write_problem(tmp_path / "pie_tests", "p09102", [10])
    pie_rows = write_jsonl(tmp_path / "pie_rows.jsonl", [{"problem_id": "p09102", "src_id": "s1", "src_code": SLOW,
                                                          "tgt_id": "t1", "tgt_code": FAST}])
    cands = write_jsonl(tmp_path / "cands.jsonl", [{"src_id": "s1", "code": FAST}])
    refused(arbiter("pie", "reward", "--rows", str(pie_rows), "--tests", str(tests), "--candidates", str(cands),
                    "--out", str(folder), "--no-progress"), folder, holder)
    # arbiter pie eval (precomputed runtimes: nothing to run)
    gens = write_jsonl(tmp_path / "gens.jsonl", [{"id": "a", "src_runtime": 6.0, "runtimes": [3.0]}])
    refused(arbiter("pie", "eval", "--generations", str(gens), "--out", str(folder), "--no-progress"), folder, holder)
    # arbiter curate goldilocks / audit write files into the folder: score two models first, elsewhere
    weak, strong = tmp_path / "weak", tmp_path / "strong"
    for folder_, responses in ((weak, [SUM_OK, "print(0)"]), (strong, [SUM_OK, SUM_OK])):
        c = write_jsonl(tmp_path / f"{folder_.name}.jsonl", [{"index": "t0", "responses": responses}])
        p = arbiter("score", "--dataset", str(dataset), "--completions", str(c), "--out", str(folder_), "--quiet")
        assert p.returncode == 0, said(p)
    curate = ["curate", "goldilocks", "--dataset", str(dataset), "--weak", str(weak), "--strong", str(strong),
              "--no-english-filter"]
    refused(arbiter(*curate, "--out", str(folder / "kept.jsonl")), folder, holder)
    assert not (folder / "kept.jsonl").exists()
    kept = tmp_path / "kept.jsonl"
    p = arbiter(*curate, "--out", str(kept))
    assert p.returncode == 0, said(p)
    p = arbiter("curate", "audit", "--dataset", str(kept), "--no-english-filter", "--report", str(folder / "a.json"))
    refused(p, folder, holder)
    assert not (folder / "a.json").exists()

    # the holder goes on undisturbed; once it is done, the folder is free again
    code, text = holder.finish()
    assert code == 0, text
    assert [r["stage"] for r in read_jsonl(folder / "rejected.jsonl")] == ["format"]
    p = arbiter(*verify)
    assert p.returncode == 0, said(p)
    keys = [r["key"] for r in read_jsonl(folder / "rejected.jsonl")]
    assert keys and len(keys) == len(set(keys))  # one row per key, whichever run wrote it


def test_a_killed_run_leaves_the_folder_free(holder, tmp_path):
    holder.proc.kill()  # SIGKILL: no cleanup code runs; the kernel drops the flock with the process
    holder.proc.wait()
    returns = tmp_path / "returns.jsonl"
    returns.write_text(FORMAT_FAIL + "\n")
    p = arbiter("oracle", "verify", "--seeds", str(DATA / "seeds.jsonl"), "--returns", str(returns), "--out",
                str(holder.folder), "--no-progress")
    assert p.returncode == 0, said(p)
    assert [r["stage"] for r in read_jsonl(holder.folder / "rejected.jsonl")] == ["format"]


def test_lock_is_reentrant_in_its_thread_refused_in_another_and_released_by_the_run(tmp_path):
    folder = tmp_path / "out"
    seen: list[str] = []

    @holds_out_dirs
    def run() -> None:
        ensure_out_dir(folder)
        ensure_out_dir(folder)  # the same run again (e.g. oracle generate, then its verification): fine
        t = threading.Thread(target=lambda: seen.append(_try_lock(folder)))
        t.start()
        t.join()

    run()
    assert seen == [f"--out {folder} is in use by another run in this process; wait for it or use another folder"]
    # released when the run returned: another thread may take it now
    t = threading.Thread(target=lambda: seen.append(_try_lock(folder, scoped=True)))
    t.start()
    t.join()
    assert seen[1] == "locked"


def _try_lock(folder: Path, scoped: bool = False) -> str:
    try:
        if scoped:
            holds_out_dirs(lock_out_dir)(folder)
        else:
            lock_out_dir(folder)
    except OutputDirBusy as exc:
        return str(exc)
    return "locked"


LOCKER = r"""
import os, sys, time
from arbiter.pipelines.outputs import open_locked, unlock
lock, owner, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
held = clashes = 0
for _ in range(rounds):
    try:
        fd = open_locked(lock)
    except BlockingIOError:
        continue
    try:
        mark = os.open(owner, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # fails while another holder has it
    except FileExistsError:
        clashes += 1
    else:
        held += 1
        os.close(mark)
        os.unlink(owner)
    unlock(lock, fd)
print(held, clashes)
"""


def test_removed_lock_files_never_let_two_holders_in(tmp_path):
    """A run removes its lock file when it ends; a process that opened the old file just before is not let in
    on it (it checks the path still names the file it locked). Four processes race for one lock 1000 times each:
    never two holders at once, and the lock file is gone at the end."""
    lock, owner = tmp_path / LOCK_NAME, tmp_path / "owner"
    procs = [subprocess.Popen([sys.executable, "-c", LOCKER, str(lock), str(owner), "1000"], stdout=subprocess.PIPE,
                              text=True, cwd=REPO) for _ in range(4)]
    results = [tuple(map(int, p.communicate(timeout=600)[0].split())) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(clashes for _, clashes in results) == 0 and sum(held for held, _ in results) > 0
    assert not lock.exists() and not owner.exists()
