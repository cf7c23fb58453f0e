"""The verl-0.9-only tests (test_verl09_reward_loop.py, test_verl09_ray.py) from the main suite:
they need verl, which arbiter's own venv does not have, so this runs them with the python of
verl 0.9.1's separate venv (built by scripts/verl_venv.sh, which ``make test`` runs first), on
THIS checkout's sources (``PYTHONPATH``), and passes when they pass. Skipped, with the reason,
when that venv does not exist; not needed (skipped) when verl is importable here."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, SHARED

pytestmark = pytest.mark.slow
VENV = Path(os.environ.get("ARBITER_VERL_VENV", Path.home() / ".cache" / "arbiter" / "verl-0.9.1"))
VERL_PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".verl-0.9.1-ok"  # written by scripts/verl_venv.sh once verl, torch and Ray are in
FILES = ["tests/verl/test_verl09_reward_loop.py", "tests/verl/test_verl09_ray.py"]


def _has_verl() -> bool:  # the distribution, not find_spec: tests/verl itself is on sys.path as "verl"
    try:
        importlib.metadata.version("verl")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.skipif(_has_verl(), reason="verl is installed in this interpreter: the verl 0.9 tests run here directly")
def test_verl09_tests_pass_in_the_verl_venv():
    if not STAMP.exists():
        pytest.skip(f"no complete verl 0.9.1 venv at {VENV} (ARBITER_VERL_VENV): build it with "
                    "scripts/verl_venv.sh (make test does)")
    env = {**os.environ, "ARBITER_SHARED": str(SHARED),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))}
    where = subprocess.run([str(VERL_PYTHON), "-c", "import arbiter, verl; print(arbiter.__file__, verl.__version__)"],
                           env=env, capture_output=True, text=True, timeout=300)
    assert where.returncode == 0, where.stderr[-2000:]
    arbiter_file, verl_version = where.stdout.split()
    assert Path(arbiter_file).resolve().is_relative_to(REPO / "src") and verl_version == "0.9.1", where.stdout
    proc = subprocess.run([str(VERL_PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *FILES],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=2400)
    tail = (proc.stdout + proc.stderr)[-6000:]
    print(tail)
    assert proc.returncode == 0, tail
    summary = [line for line in proc.stdout.splitlines() if re.search(r"\d+ passed", line)]
    assert summary and "skipped" not in summary[-1] and "failed" not in summary[-1], tail
