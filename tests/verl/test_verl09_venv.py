"""The tests that need verl from the main suite: verl 0.9.1's (test_verl09_reward_loop.py,
test_verl09_ray.py, test_verl09_stock_rewards.py, and the real TRL/OpenRLHF ones of tests/integrations/test_trainers_real.py,
which that venv holds) and verl 0.8.0's (test_verl08.py). arbiter's own venv has no verl, so this runs
them with the python of each release's separate venv (built by ``scripts/verl_venv.sh [VERSION]``,
which ``make test`` runs first), on THIS checkout's sources (``PYTHONPATH``), and passes when they
pass. Skipped, with the reason, when that venv does not exist; not needed (skipped) when verl is
importable here."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, SHARED

pytestmark = pytest.mark.slow
CACHE = Path.home() / ".cache" / "arbiter"
#: version -> (its venv, the test files run there); the venv variables are scripts/verl_venv.sh's
RELEASES = {
    "0.9.1": (Path(os.environ.get("ARBITER_VERL_VENV", CACHE / "verl-0.9.1")),
              ["tests/verl/test_verl09_reward_loop.py", "tests/verl/test_verl09_ray.py",
               "tests/verl/test_verl09_stock_rewards.py", "tests/integrations/test_trainers_real.py"]),
    "0.8.0": (Path(os.environ.get("ARBITER_VERL08_VENV", CACHE / "verl-0.8.0")), ["tests/verl/test_verl08.py"]),
}


def _has_verl() -> bool:  # the distribution, not find_spec: tests/verl itself is on sys.path as "verl"
    try:
        importlib.metadata.version("verl")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.skipif(_has_verl(), reason="verl is installed in this interpreter: the verl tests run here directly")
@pytest.mark.timeout(2500)  # the files' own run has 2400 s (the suite's 900 s is per test; here one test is many)
@pytest.mark.parametrize("version", list(RELEASES))
def test_verl_tests_pass_in_the_verl_venv(version):
    venv, files = RELEASES[version]
    verl_python = venv / "bin" / "python"
    if not (venv / f".verl-{version}-ok").exists():  # written by scripts/verl_venv.sh once verl, torch and Ray are in
        pytest.skip(f"no complete verl {version} venv at {venv}: build it with scripts/verl_venv.sh {version} "
                    "(make test does)")
    env = {**os.environ, "ARBITER_SHARED": str(SHARED),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))}
    where = subprocess.run([str(verl_python), "-c", "import arbiter, verl; print(arbiter.__file__, verl.__version__)"],
                           env=env, capture_output=True, text=True, timeout=300)
    assert where.returncode == 0, where.stderr[-2000:]
    arbiter_file, verl_version = where.stdout.split()
    assert Path(arbiter_file).resolve().is_relative_to(REPO / "src") and verl_version == version, where.stdout
    proc = subprocess.run([str(verl_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *files],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=2400)
    tail = (proc.stdout + proc.stderr)[-6000:]
    print(tail)
    assert proc.returncode == 0, tail
    summary = [line for line in proc.stdout.splitlines() if re.search(r"\d+ passed", line)]
    assert summary and "skipped" not in summary[-1] and "failed" not in summary[-1], tail
