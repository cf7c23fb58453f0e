"""The toolchain probe is kept in the cache folder: a new process reuses it without running the
compiler, and an entry that no longer matches the installed files (or is torn) is probed again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FLAGS = ("-std=gnu++17", "-O2")
#: Prints the fingerprint; with "offline", running any tool fails the probe (so it must come from the file).
PROBE = """
import sys
from arbiter.languages.cpp import toolchain
if sys.argv[1] == "offline":
    def refuse(argv):
        raise AssertionError("the probe ran " + " ".join(argv))
    toolchain._first_line = refuse
print(toolchain.probe_toolchain("g++", ("-std=gnu++17", "-O2")).fingerprint)
"""


def _probe(cache: Path, mode: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ARBITER_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env=env, timeout=120)


def test_a_second_process_takes_the_stored_probe(tmp_path: Path):
    first = _probe(tmp_path, "online")
    assert first.returncode == 0, first.stderr
    assert len(list((tmp_path / "toolchain").glob("*.json"))) == 1
    second = _probe(tmp_path, "offline")
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    from arbiter.languages.cpp.toolchain import probe_toolchain
    assert second.stdout.strip() == probe_toolchain("g++", FLAGS).fingerprint


def test_a_stale_or_torn_entry_is_probed_again(tmp_path: Path):
    first = _probe(tmp_path, "online")
    assert first.returncode == 0, first.stderr
    (entry,) = (tmp_path / "toolchain").glob("*.json")
    data = json.loads(entry.read_text())
    data["lib"][-1] += 1  # the libstdc++ file it named changed (its inode)
    entry.write_text(json.dumps(data))
    stale = _probe(tmp_path, "offline")
    assert stale.returncode != 0 and "the probe ran" in stale.stderr
    entry.write_text('{"toolchain": {"compiler"')
    torn = _probe(tmp_path, "offline")
    assert torn.returncode != 0 and "the probe ran" in torn.stderr
    again = _probe(tmp_path, "online")
    assert again.returncode == 0 and again.stdout == first.stdout
    assert _probe(tmp_path, "offline").stdout == first.stdout
