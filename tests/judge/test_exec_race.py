"""A correct compiled program is never RE because of what other threads of the judge do (issue 28).

The executable used to be written into the sandbox's folder through a descriptor of the judge
process: a process another thread started meanwhile inherited it, and ``execve`` of the binary
failed with ETXTBSY (``RE: exec /prog/main failed: [Errno 26] Text file busy``, 11 in 200 here).
The session server writes ``/prog`` itself now; a program that cannot be started is
``SANDBOX_ERROR`` (retried), never the program's verdict.
"""

from __future__ import annotations

import collections
import os
import subprocess
import threading
import time

from arbiter.judge.judge import judge
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.execution import Status
from arbiter.sandbox.sandbox import Sandbox
from session_pairs import big_binary_task

SUBMISSIONS = 150


def _churn(stop: threading.Event, fork: bool) -> None:
    """Start processes until ``stop``: forked children that live 3 ms without exec (holding a
    copy of every descriptor the process had), or ``true`` started by subprocess."""
    while not stop.is_set():
        if fork:
            pid = os.fork()
            if pid == 0:
                time.sleep(0.003)
                os._exit(0)
            os.waitpid(pid, 0)
        else:
            subprocess.run(["true"], check=False)


def test_correct_cpp_is_ac_while_other_threads_start_processes():
    assert judge(big_binary_task(1)).outcome is Outcome.AC  # (compiled once, then cached)
    stop = threading.Event()
    threads = [threading.Thread(target=_churn, args=(stop, fork), daemon=True) for fork in (True, False)]
    for t in threads:
        t.start()
    outcomes: collections.Counter = collections.Counter()
    reasons = []
    try:
        for i in range(SUBMISSIONS):
            v = judge(big_binary_task(i))
            outcomes[v.outcome] += 1
            if v.outcome is not Outcome.AC:
                reasons.append(v.reason)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert outcomes == {Outcome.AC: SUBMISSIONS}, (outcomes, reasons[:5])


def test_a_program_that_cannot_be_started_is_a_sandbox_error_not_re():
    with Sandbox(files={"main": b"\x7fELF not really"}) as sb:
        for argv in (["/prog/main"], ["/prog/missing"]):
            ex = sb.run(argv)
            assert ex.status is Status.SANDBOX_ERROR and "could not be started" in ex.detail, (ex.status, ex.detail)
        ex = sb.run(["/bin/sh", "-c", "exit 127"])  # the program's own 127 stays its own
        assert ex.status is Status.RUNTIME_ERROR and ex.exit_code == 127
