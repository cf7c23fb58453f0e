"""``arbiter score --ray ADDRESS`` against a real token-authenticated Ray head (``ray start --head``
with ``RAY_AUTH_MODE=token``, as Ray >= 2.60 starts one), run without the token: it exits 2 with a
message naming the cause (Ray's authentication error, which Ray keeps in the exception chain) and
the fix (docs/cluster.md, "Quick start"). The head runs on free ports in a temporary folder, with a
HOME of its own (nothing is written to ~/.ray), and is stopped through its own process group only."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from cluster.ray_rows import NO_CODE  # noqa: E402

from arbiter.cluster.backend import TOKEN_HINT  # noqa: E402

PORT_OPTIONS = ("--ray-client-server-port", "--dashboard-port", "--dashboard-agent-listen-port",
                "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port",
                "--node-manager-port", "--object-manager-port")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def without_ray_settings(home: Path) -> dict[str, str]:
    """This environment without any RAY_* variable (no token, no auth mode) and with ``home`` as
    HOME (so no ~/.ray/auth_token of this machine is found either)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(home)
    return env


@pytest.fixture(scope="module")
def token_head():
    """A Ray head with token authentication; yields its GCS address; stopped by its process group."""
    work = Path(tempfile.mkdtemp(prefix="arbray", dir="/tmp"))  # short: Ray's socket paths must stay < 108 bytes
    (work / "home").mkdir()
    port = free_port()
    env = without_ray_settings(work / "home")
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16))
    cmd = [str(Path(sys.executable).with_name("ray")), "start", "--head", "--block", f"--port={port}",
           f"--temp-dir={work}/ray", "--num-cpus=1", "--include-dashboard=false", "--disable-usage-stats",
           "--min-worker-port=0", "--max-worker-port=0", *(f"{opt}={free_port()}" for opt in PORT_OPTIONS)]
    log = open(work / "head.log", "w")
    head = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:  # the GCS listens once the head is up
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert head.poll() is None and time.monotonic() < deadline, (work / "head.log").read_text()[-3000:]
                time.sleep(0.2)
        yield f"127.0.0.1:{port}", work
    finally:
        os.killpg(head.pid, signal.SIGTERM)  # this head's processes only (its own session)
        try:
            head.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(head.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        head.wait()
        log.close()
        shutil.rmtree(work, ignore_errors=True)


def test_score_without_the_token_names_the_cause_and_the_fix(token_head):
    address, work = token_head
    rows, completions = work / "rows.jsonl", work / "completions.jsonl"
    rows.write_text('{"data_source": "apps", "prompt": [{"role": "user", "content": "Echo."}], "reward_model": '
                    '{"style": "rule", "ground_truth": "{\\"inputs\\": [\\"1\\\\n\\"], \\"outputs\\": [\\"1\\\\n\\"]}"}, '
                    '"extra_info": {"index": "a"}}\n')
    completions.write_text('{"data_source": "apps", "index": "a", "responses": ["%s"]}\n' % NO_CODE)
    env = without_ray_settings(work / "home")
    env["RAY_gcs_server_port_wait_time_s"] = "2"  # Ray retries the GCS for 10 s by default; the answer is the same
    proc = subprocess.run([sys.executable, "-m", "arbiter.cli.main", "score", "--dataset", str(rows), "--completions",
                           str(completions), "--out", str(work / "out"), "--quiet", "--ray", address],
                          env=env, capture_output=True, text=True, timeout=600)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2, said[-3000:]
    assert f"Failed to connect to Ray cluster at" in said, said[-3000:]
    assert "AuthenticationError" in said and "token is missing or incorrect" in said, said[-3000:]  # the cause
    assert " ".join(TOKEN_HINT.split()) in said, said[-3000:]  # the fix
    assert "Traceback" not in said.split("error: ")[-1], said[-3000:]  # Ray's pasted traceback cut to its exception
    print(said.split("error: ")[-1])
    assert not (work / "out" / "verdicts.jsonl").exists()
