"""`dagster dev` started for a test, as `make ui` runs it: on a free loopback port, in its own process
group (stopped whole afterwards), its output in a log file the failure messages quote; and on the
pool-holder code location of tests/deploy (a step that holds the `neo4j` slot while told to)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dagster_dev(args: list[str], env: dict[str, str], cwd: Path, log: Path, timeout: float = 180) -> Iterator[str]:
    """`dagster dev ARGS -h 127.0.0.1 -p <free port>`; its URL once it serves."""
    with serving(["dagster", "dev", *args], env, cwd, log, timeout) as url:
        yield url


@contextmanager
def dagster_webserver(args: list[str], env: dict[str, str], cwd: Path, log: Path, timeout: float = 120) -> Iterator[str]:
    """`dagster-webserver ARGS -h 127.0.0.1 -p <free port>` (the UI alone, no daemon); its URL once it serves."""
    with serving(["dagster-webserver", *args], env, cwd, log, timeout) as url:
        yield url


@contextmanager
def serving(command: list[str], env: dict[str, str], cwd: Path, log: Path, timeout: float) -> Iterator[str]:
    """The venv's `command` on a free loopback port, in its own process group; its URL once it serves."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    program = Path(sys.executable).parent / command[0]
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(program), *command[1:], "-h", "127.0.0.1", "-p", str(port)], cwd=cwd, env=env,
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
                pytest.fail(f"{command[0]} did not serve on {url}:\n{log.read_text(errors='replace')[-4000:]}")
            time.sleep(0.2)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def wait_for(what: str, check: Callable[[], T | None], timeout: float, log: Path) -> T:
    """`check()`'s first truthy result, polled; a failure quoting the log after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{log.read_text(errors='replace')[-3000:]}")


# ---------------------------------------------------------------------------------------------------
# tests/deploy/pool_holder.py: a code location whose one step holds a `neo4j` pool slot while told to

REPO = Path(__file__).resolve().parent.parent
HOLDER = REPO / "tests" / "deploy" / "pool_holder.py"
HOLDER_LOCATION = HOLDER.name  # (dagster dev -f names the location after the file)


@dataclass(frozen=True)
class HolderDev:
    home: Path  # the DAGSTER_HOME
    url: str
    holder: Path  # POOL_HOLDER_DIR: the `hold` file, each run's step's process id
    log: Path

    def client(self) -> Any:
        from dagster_graphql import DagsterGraphQLClient

        return DagsterGraphQLClient("127.0.0.1", port_number=int(self.url.rsplit(":", 1)[1]), timeout=60)

    def step_pid(self, run_id: str) -> int:
        """The process of the run's step once it holds the slot."""
        return int(wait_for("the run's step to hold the slot", lambda: _written(self.holder / f"{run_id}.pid"), 120, self.log))


@contextmanager
def pool_holder_dev(home: Path, workdir: Path) -> Iterator[HolderDev]:
    """`dagster dev -f tests/deploy/pool_holder.py` on the instance of `home`."""
    holder = workdir / "holder"
    holder.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home), "POOL_HOLDER_DIR": str(holder), "PYTHONPATH": str(REPO),
           "PYTHONUNBUFFERED": "1"}
    log = workdir / "dagster-dev.log"
    with dagster_dev(["-f", str(HOLDER)], env, workdir, log) as url:
        yield HolderDev(home, url, holder, log)


def submit_hold_job(client: Any) -> str | None:
    """A run of the holder's job; None while the location is still loading."""
    from dagster_graphql import DagsterGraphQLClientError

    try:
        return client.submit_job_execution("hold_job", repository_location_name=HOLDER_LOCATION, repository_name="__repository__")
    except DagsterGraphQLClientError as e:
        if "notfound" in str(e).lower().replace(" ", ""):  # still loading the location
            return None
        raise


def _written(path: Path) -> str | None:
    return path.read_text() if path.exists() and path.read_text() else None
