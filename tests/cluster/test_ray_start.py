"""``--ray local`` when Ray cannot start: Ray is tried 3 times, then the run prints one line and exits 4 (a
documented status; before, Ray's traceback and exit 1, which ``arbiter score`` keeps for responses that hit
SANDBOX_ERROR). The failure is Ray's own: its temp dir (``RAY_TMPDIR``) lies under a file, so every start fails
for real, as a start that times out on a loaded node does. Real rows, the real CLI, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

from cluster.ray_rows import make_inputs  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data/oracle"


def run(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    blocker = tmp / "not_a_dir"
    blocker.write_text("")
    env = dict(os.environ, RAY_TMPDIR=str(blocker / "ray"), COLUMNS="300")
    env.pop("RAY_ADDRESS", None)
    return subprocess.run([sys.executable, "-m", "arbiter.cli.main", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=600)


def test_score_and_oracle_verify_exit_4_in_one_line_when_ray_cannot_start(shared, tmp_path):
    dataset, completions, _ = make_inputs(shared, tmp_path, leetcode_rows=1, per_row=1)
    for args, out in ((["score", "--dataset", str(dataset), "--completions", str(completions), "--quiet"],
                       tmp_path / "score"),
                      (["oracle", "verify", "--seeds", str(DATA / "seeds.jsonl"), "--returns",
                        str(DATA / "return_example.jsonl"), "--no-progress"], tmp_path / "verify")):
        r = run(*args, "--out", str(out), "--ray", "local", tmp=tmp_path)
        said = r.stdout + r.stderr
        assert r.returncode == 4, said
        ours = [line for line in said.splitlines() if line.startswith("error:")]
        assert len(ours) == 1 and "Ray did not start in 3 tries" in ours[0] and "Not a directory" in ours[0], said
        assert "Traceback" not in said and "╭" not in said
        assert not (out / "verdicts.jsonl").exists() and not (out / "verified.jsonl").exists()
