"""Start ``arbiter serve`` for real on a free loopback port (a subprocess) for the server tests."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx

ARBITER = Path(sys.executable).with_name("arbiter")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """One ``arbiter serve`` process; ``url`` is its base URL."""

    def __init__(self, *args: str, token: str | None = None, env: dict[str, str] | None = None):
        self.token = token
        cmd = [str(ARBITER), "serve", "--port", "0", *args] + (["--token", token] if token else [])
        self.proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self._started = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._started.wait(60) or self.proc.poll() is not None:
            self.proc.kill()
            raise RuntimeError(f"arbiter serve did not start: {self.output()[-2000:]}")
        self.port = int(re.search(r"listening on http://[^:]+:(\d+)", self.startup_line).group(1))
        self.url = f"http://127.0.0.1:{self.port}"

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)
            if "listening on" in line:
                self._started.set()
        self._started.set()

    @property
    def startup_line(self) -> str:
        return next((line for line in self.lines if "listening on" in line), "")

    def output(self) -> str:
        return "".join(self.lines)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def metrics(self) -> dict[str, float]:
        text = httpx.get(self.url + "/metrics", headers=self.headers, timeout=30).text
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode
