"""``run_once`` (SandboxFusion's ``/run_code``): a run in the sandbox an earlier run of the program left
warm starts from the request's files; a file to fetch that the program made a FIFO is omitted."""

from __future__ import annotations

import pytest

from arbiter.judge.run_once import WarmSandboxes, run_once
from arbiter.sandbox.limits import Limits

_APPENDS = """
import os, sys
print(repr(open("data.txt").read()), sorted(os.listdir(".")))
sys.stderr.write(str(os.getpid()))
open("data.txt", "a").write("X")
open("extra.txt", "w").write("left over")
"""


def test_a_warm_run_gets_the_request_files_as_given():
    """Red team (serve): three identical requests printed 'orig', 'origX', 'origXX' (the files
    were written only into a fresh sandbox; a warm one kept them as the last run left them)."""
    warm = WarmSandboxes()
    seen, pids = [], []
    try:
        for stdin in (b"1", b"2", b"3"):
            r = run_once("python", _APPENDS, stdin, Limits(cpu_seconds=2), files={"data.txt": b"orig"}, warm=warm)
            assert r.execution is not None and r.execution.ok, r
            seen.append(r.execution.stdout.decode().strip())
            pids.append(int(r.execution.stderr))
    finally:
        warm.close()
    assert pids[0] < pids[1] < pids[2], pids  # one warm sandbox: each case forked after the last one
    assert seen == ["'orig' ['data.txt']"] * 3, seen


def test_a_fifo_in_fetch_files_is_omitted_not_a_sandbox_error():
    """Red team (serve): a program that leaves a FIFO where a fetched file should be held the
    server's open until the host's 60 s channel timeout: SANDBOX_ERROR (arbiter's fault, retried,
    a judge slot held a minute). It is the program's doing: a file that is not regular, omitted."""
    r = run_once("python", "import os\nos.mkfifo('out.txt')\nprint('made')\n", b"", Limits(cpu_seconds=2),
                 fetch=("out.txt",))
    assert r.sandbox_error == "" and r.execution is not None and r.execution.ok, r
    assert r.files == {} and r.files_omitted == {"out.txt": "missing or not a regular file"}, r


def test_a_put_onto_a_fifo_the_program_left_fails_at_once():
    """A second red team (serve): a program that turned its request file into a FIFO made the next warm run's put
    wait for a reader until the host's 30 s timeout (a judge slot held, verl's request a 504). The put now fails at
    once (no reader: ENXIO) and the run takes a fresh sandbox, as for any failed put."""
    from arbiter.sandbox.sandbox import Sandbox, SandboxError

    with Sandbox() as sb:
        sb.put("data.txt", b"orig")
        made = sb.run(["/bin/sh", "-c", "rm data.txt && mkfifo data.txt && echo made"])
        assert made.ok and made.stdout == b"made\n", made
        with pytest.raises(SandboxError, match="No such device or address"):
            sb.put("data.txt", b"orig")
