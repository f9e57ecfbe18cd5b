"""The production topology without containers, for tests/deploy: a real PostgreSQL (the `postgres`
fixture), a DAGSTER_HOME holding deploy/dagster.yaml (with the default run launcher: no Docker
here), and the processes of deploy/docker-compose.yml started with the compose file's own
commands: the storage setup (dagster-init), the code location's gRPC server, the webserver and
the daemon (the `deployment` fixture: started once for the tests that use it, its bucket emptied
before each); runs submitted through the webserver's GraphQL API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import yaml
from postgres_server import free_port
from s3_buckets import empty_bucket, fresh_bucket

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
BIN = Path(sys.executable).parent

START_TIMEOUT = 150.0  # code server, webserver: imports of dagster and the project on 2 cores
RUN_TIMEOUT = 300.0  # queue -> daemon -> run worker -> five steps
STOP_TIMEOUT = 20.0


class Process:
    """A command in its own process group, logging to a file; stop() ends the whole group."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], cwd: Path, logs: Path):
        self.name = name
        self.log = logs / f"{name}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace").splitlines()[-lines:]
        return f"--- {self.name} (exit {self.proc.poll()}) {self.log}\n" + "\n".join(text)

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                try:
                    os.killpg(self.proc.pid, 0)  # anyone left in the group?
                except ProcessLookupError:
                    self.proc.poll()
                    return
                self.proc.poll()  # reap the leader so it does not linger as a zombie
                time.sleep(0.2)


def wait_for(what: str, check, processes: list[Process], timeout: float):
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        for p in processes:
            if not p.alive():
                pytest.fail(f"{p.name} exited while waiting for {what}:\n{p.tail()}")
        try:
            result = check()
            if result:
                return result
        except Exception as e:  # noqa: BLE001 - not ready yet
            last = e
        time.sleep(0.5)
    logs = "\n".join(p.tail() for p in processes)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})\n{logs}")


def run_bounded(cmd: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 180.0) -> subprocess.CompletedProcess:
    """subprocess.run in its own process group: on timeout the whole group goes, not just `sh`."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{cmd} did not finish within {timeout:.0f} s:\n{out}\n{err}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def compose_command(service: dict) -> list[str]:
    """A compose service's command as the container would run it ($$ is compose's escaped $)."""
    command = service["command"]
    assert isinstance(command, list)
    return [part.replace("$$", "$") for part in command]


def with_flag(cmd: list[str], name: str, value: str) -> list[str]:
    out = list(cmd)
    out[out.index(name) + 1] = value
    return out


def in_venv(cmd: list[str]) -> list[str]:
    return [str(BIN / cmd[0]), *cmd[1:]] if (BIN / cmd[0]).exists() else cmd


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.loads(response.read())
    assert not answer.get("errors"), answer["errors"]
    return answer["data"]


INSTIGATORS = """
query ($location: String!) {
  repositoryOrError(repositorySelector: {repositoryLocationName: $location, repositoryName: "__repository__"}) {
    __typename
    ... on Repository {
      sensors { id name sensorState { status } }
      schedules { id name scheduleState { status } }
    }
  }
}"""
STOP_SENSOR = "mutation ($id: String) { stopSensor(id: $id) { __typename } }"
STOP_SCHEDULE = "mutation ($id: String) { stopRunningSchedule(id: $id) { __typename } }"


def stop_instigators(port: int, location: str = "chatetl") -> list[str] | None:
    """Stop every running sensor and schedule of the location; their names (None: not loaded yet)."""
    repo = graphql(port, INSTIGATORS, {"location": location})["repositoryOrError"]
    if repo["__typename"] != "Repository":
        return None
    names = []
    for sensor in repo["sensors"]:
        if sensor["sensorState"]["status"] == "RUNNING":
            result = graphql(port, STOP_SENSOR, {"id": sensor["id"]})["stopSensor"]["__typename"]
            assert result == "StopSensorMutationResult", result
        names.append(sensor["name"])
    for schedule in repo["schedules"]:
        if schedule["scheduleState"]["status"] == "RUNNING":
            result = graphql(port, STOP_SCHEDULE, {"id": schedule["id"]})["stopRunningSchedule"]["__typename"]
            assert result == "ScheduleStateResult", result
        names.append(schedule["name"])
    again = graphql(port, INSTIGATORS, {"location": location})["repositoryOrError"]
    states = [s["sensorState"]["status"] for s in again["sensors"]] + [s["scheduleState"]["status"] for s in again["schedules"]]
    assert set(states) <= {"STOPPED"}, states
    return names


@contextmanager
def running_topology(postgres, bucket: str, root: Path) -> Iterator[dict]:
    """deploy/dagster.yaml on the real PostgreSQL, with the compose file's processes started, on `bucket`."""
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    home = root / "dagster_home"
    home.mkdir()
    # deploy/dagster.yaml, but for its run launcher: no Docker here, so each run is a process the code
    # server starts (the default launcher) instead of a container
    instance_config = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    assert instance_config["run_launcher"]["class"] == "DockerRunLauncher"
    instance_config["run_launcher"] = {"module": "dagster", "class": "DefaultRunLauncher"}
    (home / "dagster.yaml").write_text(yaml.safe_dump(instance_config))
    logs = root / "logs"
    logs.mkdir()
    workdir = root / "app"  # like the image's WORKDIR: nothing is imported from the current folder
    workdir.mkdir()

    settings = {
        **postgres.env(),
        "DAGSTER_HOME": str(home),
        "CHATETL_STORE": "s3",
        "CHATETL_S3_BUCKET": bucket,
        "CHATETL_S3_PREFIX": "",
        "CHATETL_NEO4J_POOL_LIMIT": "1",
    }
    # the image's PYTHONPATH: the library is installed, the Dagster layer imported from the source tree
    env = {**os.environ, **settings, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(REPO)}

    # dagster-init: the storage schema and the neo4j pool limit, as in compose
    init = compose_command(compose["services"]["dagster-init"])
    done = run_bounded(init, env, workdir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Set concurrency limit for neo4j to 1" in done.stdout

    grpc_port, web_port = free_port(), free_port()
    grpc = compose_command(compose["services"]["chatetl"])
    grpc = in_venv(with_flag(with_flag(grpc, "-h", "127.0.0.1"), "-p", str(grpc_port)))
    workspace = yaml.safe_load((DEPLOY / "workspace.docker.yaml").read_text())
    server = workspace["load_from"][0]["grpc_server"]
    server.update(host="127.0.0.1", port=grpc_port)
    (workdir / "workspace.yaml").write_text(yaml.safe_dump(workspace))
    daemon = in_venv(with_flag(compose_command(compose["services"]["daemon"]), "-w", str(workdir / "workspace.yaml")))
    web = compose_command(compose["services"]["webserver"])
    web = in_venv(with_flag(with_flag(with_flag(web, "-h", "127.0.0.1"), "-p", str(web_port)), "-w", str(workdir / "workspace.yaml")))

    processes: list[Process] = []
    try:
        processes.append(Process("code-server", grpc, env, workdir, logs))
        from dagster._grpc.client import DagsterGrpcClient

        client = DagsterGrpcClient(port=grpc_port, host="127.0.0.1")
        wait_for("the code location's gRPC server", lambda: client.ping("ready") is not None, processes, START_TIMEOUT)
        health = compose["services"]["chatetl"]["healthcheck"]["test"][1:]
        check = run_bounded(in_venv(with_flag(health, "-p", str(grpc_port))), env, workdir, timeout=60)
        assert check.returncode == 0, f"the compose healthcheck of the code location fails: {check.stdout}{check.stderr}"

        processes.append(Process("webserver", web, env, workdir, logs))
        wait_for("the webserver", lambda: urllib.request.urlopen(f"http://127.0.0.1:{web_port}/server_info", timeout=5).status == 200,
                 processes, START_TIMEOUT)
        # only this test's runs: turn off the sensors and schedules that start on their own
        # (as an operator would in the UI) before the daemon ticks them
        stopped = wait_for("the location's sensors and schedules", lambda: stop_instigators(web_port), processes, START_TIMEOUT)
        assert "upload_sensor" in stopped
        processes.append(Process("daemon", daemon, env, workdir, logs))
        yield {"home": home, "web_port": web_port, "bucket": bucket, "env": env, "settings": settings, "processes": processes}
    finally:
        for p in reversed(processes):
            p.stop()
        left = [p.name for p in processes if p.alive()]
        assert not left, f"still running: {left}"


@pytest.fixture(scope="session")
def shared_topology(postgres, services, tmp_path_factory):
    """The production topology, started by the first test that asks for it and stopped after the last
    (rather than once per test: its start is most of such a test's time; its processes would
    otherwise tick through the rest of the suite). A pair of functions: start() -> the deployment, stop()."""
    stack = ExitStack()
    running: dict = {}

    def start() -> dict:
        if not running:
            bucket = stack.enter_context(fresh_bucket(services["CHATETL_S3_ENDPOINT_URL"]))
            running.update(stack.enter_context(running_topology(postgres, bucket, tmp_path_factory.mktemp("deployment"))))
        return running

    def stop() -> None:
        running.clear()
        stack.close()

    yield start, stop
    stop()


@pytest.fixture
def deployment(shared_topology, services, request, monkeypatch):
    """The production topology (`running_topology`) for one test, with an empty bucket; the run storage
    (the session's PostgreSQL) and the processes are shared with the other tests that use it."""
    from chatetl.storage import s3_client

    start, stop = shared_topology
    running = start()
    empty_bucket(s3_client(services["CHATETL_S3_ENDPOINT_URL"]), running["bucket"])
    for key, value in running["settings"].items():
        monkeypatch.setenv(key, value)  # for the DagsterInstance this test reads runs from
    yield running
    if request.node is [item for item in request.session.items if "deployment" in getattr(item, "fixturenames", ())][-1]:
        stop()


def submitter(deployment):
    """submit(partition): a run of ingest_job for the partition through the webserver's GraphQL API, its id
    (None while the webserver is still loading the code location)."""
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    client = DagsterGraphQLClient("127.0.0.1", port_number=deployment["web_port"], timeout=60)

    def submit(partition: str, tags: dict[str, str] | None = None):
        try:
            return client.submit_job_execution("ingest_job", repository_location_name="chatetl",
                                               tags={"dagster/partition": partition, **(tags or {})})
        except DagsterGraphQLClientError as e:
            if "notfound" in str(e).lower().replace(" ", ""):  # the webserver may still be loading the location
                return None
            raise

    return submit


def event_time(records, kind) -> float:
    return next(r.timestamp for r in records if r.is_dagster_event and r.dagster_event.event_type == kind)


START_SENSOR = """
mutation ($selector: SensorSelector!) {
  startSensor(sensorSelector: $selector) { __typename ... on PythonError { message } }
}"""


def start_sensor(port: int, name: str, location: str = "chatetl") -> None:
    """Turn a sensor of the location on (the fixture turned them all off), as an operator would in the UI."""
    selector = {"repositoryLocationName": location, "repositoryName": "__repository__", "sensorName": name}
    result = graphql(port, START_SENSOR, {"selector": selector})["startSensor"]
    assert result["__typename"] == "Sensor", result
