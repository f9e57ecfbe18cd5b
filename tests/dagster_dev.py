"""`dagster dev` started for a test, as `make ui` runs it: on a free loopback port, in its own process
group (stopped whole afterwards), its output in a log file the failure messages quote."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dagster_dev(args: list[str], env: dict[str, str], cwd: Path, log: Path, timeout: float = 180) -> Iterator[str]:
    """`dagster dev ARGS -h 127.0.0.1 -p <free port>`; its URL once it serves."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    dagster = Path(sys.executable).parent / "dagster"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(dagster), "dev", *args, "-h", "127.0.0.1", "-p", str(port)], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/server_info", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"dagster dev did not serve on {url}:\n{log.read_text(errors='replace')[-4000:]}")
            time.sleep(1)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
