"""The production instance, run for real: PostgreSQL storage, the queued run coordinator, the daemon.

A real PostgreSQL server (Debian's `postgresql` package, started here by deploy/postgres.py),
a DAGSTER_HOME holding deploy/dagster.yaml unchanged, and the processes of
deploy/docker-compose.yml started with the compose file's own commands: the storage setup
(dagster-init), the code location's gRPC server, the daemon and the webserver. A run of
ingest_job for the day of an uploaded sample is submitted through the webserver's GraphQL API,
waits in the queue, is started by the daemon and succeeds against the test Neo4j and S3;
with a run of another day and a second run of the same day, the run and pool limits of
deploy/dagster.yaml are seen at work.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import date, timedelta
from pathlib import Path

import pytest
import yaml
from postgres_server import free_port
from upload_partitions import added

from chatetl.ingest.groups import group_of
from chatetl.layout import NORMALIZED_PREFIX
from chatetl.samples import chatgpt_export
from chatetl.storage import S3ObjectStore, s3_client

pytestmark = [
    pytest.mark.integration,
    # dagster_graphql's client still uses an older gql call style
    pytest.mark.filterwarnings("ignore:Using variable_values and operation_name:DeprecationWarning"),
]

REPO = Path(__file__).resolve().parents[2]
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


@pytest.fixture
def deployment(postgres, services, s3_bucket, tmp_path, monkeypatch):
    """deploy/dagster.yaml on the real PostgreSQL, with the compose file's processes started."""
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_bytes((DEPLOY / "dagster.yaml").read_bytes())
    logs = tmp_path / "logs"
    logs.mkdir()
    workdir = tmp_path / "app"  # like the image's WORKDIR: nothing is imported from the current folder
    workdir.mkdir()

    settings = {
        **postgres.env(),
        "DAGSTER_HOME": str(home),
        "CHATETL_STORE": "s3",
        "CHATETL_S3_BUCKET": s3_bucket,
        "CHATETL_S3_PREFIX": "",
        "CHATETL_NEO4J_POOL_LIMIT": "1",
    }
    for key, value in settings.items():
        monkeypatch.setenv(key, value)  # for the DagsterInstance this test reads runs from
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
        yield {"home": home, "web_port": web_port, "bucket": s3_bucket, "env": env, "processes": processes}
    finally:
        for p in reversed(processes):
            p.stop()
        left = [p.name for p in processes if p.alive()]
        assert not left, f"still running: {left}"


def submitter(deployment):
    """submit(partition): a run of ingest_job for the partition through the webserver's GraphQL API, its id
    (None while the webserver is still loading the code location)."""
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    client = DagsterGraphQLClient("127.0.0.1", port_number=deployment["web_port"], timeout=60)

    def submit(partition: str):
        try:
            return client.submit_job_execution("ingest_job", repository_location_name="chatetl", tags={"dagster/partition": partition})
        except DagsterGraphQLClientError as e:
            if "notfound" in str(e).lower().replace(" ", ""):  # the webserver may still be loading the location
                return None
            raise

    return submit


def step_windows(records) -> dict[str, tuple[float, float]]:
    """step key -> (STEP_START, STEP_SUCCESS) timestamps of one run."""
    from dagster import DagsterEventType

    started, windows = {}, {}
    for r in records:
        if not r.is_dagster_event:
            continue
        kind = r.dagster_event.event_type
        if kind == DagsterEventType.STEP_START:
            started[r.dagster_event.step_key] = r.timestamp
        elif kind == DagsterEventType.STEP_SUCCESS:
            windows[r.dagster_event.step_key] = (started[r.dagster_event.step_key], r.timestamp)
    return windows


def event_time(records, kind) -> float:
    return next(r.timestamp for r in records if r.is_dagster_event and r.dagster_event.event_type == kind)


def neo4j_pool_steps() -> set[str]:
    """Step keys of the assets in the neo4j pool (one asset per step in this project)."""
    from assets.definitions import defs

    graph = defs.resolve_asset_graph()
    return {"__".join(key.path) for key in graph.get_all_asset_keys() if "neo4j" in (graph.get(key).pools or set())}


def test_queued_runs_succeed_on_postgres_storage(deployment, clean_graph, services):
    """Three runs through the queue: two days in parallel, the same day again after the first,
    and the neo4j pool's steps one at a time across all of them."""
    from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus
    from dagster_graphql import DagsterGraphQLClient

    processes = deployment["processes"]
    store = S3ObjectStore(s3_client(services["CHATETL_S3_ENDPOINT_URL"]), deployment["bucket"])
    info = store.put_bytes("raw/deploy-test/chatgpt-export.zip", chatgpt_export())
    day = group_of(info).key  # the uploader's partition of the day
    day_before = (date.fromisoformat(group_of(info).day) - timedelta(days=1)).isoformat()  # no uploads: an empty partition
    with DagsterInstance.from_config(str(deployment["home"])) as setup:
        added(setup, day, day_before)  # as the sensor adds them

    client = DagsterGraphQLClient("127.0.0.1", port_number=deployment["web_port"], timeout=60)
    submit = submitter(deployment)

    first = wait_for("the code location to accept a run", lambda: submit(day), processes, START_TIMEOUT)
    other_day = submit(day_before)
    same_day = submit(day)  # must wait in the queue: one run per partition at a time
    run_ids = {"first": first, "other_day": other_day, "same_day": same_day}

    instance = DagsterInstance.from_config(str(deployment["home"]))
    try:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        terminal = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}

        def finished():
            runs = {name: instance.get_run_by_id(rid) for name, rid in run_ids.items()}
            return runs if all(r is not None and r.status in terminal for r in runs.values()) else None

        runs = wait_for("the three runs to finish", finished, processes, RUN_TIMEOUT)
        logs = {name: instance.all_logs(rid) for name, rid in run_ids.items()}
        for name, run in runs.items():
            if run.status != DagsterRunStatus.SUCCESS:
                errors = [r.user_message for r in logs[name] if r.is_dagster_event and r.dagster_event.is_failure]
                pytest.fail(f"{name} run {run.status}: {errors}\n" + "\n".join(p.tail() for p in processes))

        for name, records in logs.items():
            kinds = [r.dagster_event.event_type for r in records if r.is_dagster_event]
            # submitted to the queue by the webserver, launched from it by the daemon, done
            order = [DagsterEventType.RUN_ENQUEUED, DagsterEventType.RUN_STARTING, DagsterEventType.RUN_SUCCESS]
            assert all(k in kinds for k in order), f"{name}: {kinds}"
            assert [kinds.index(k) for k in order] == sorted(kinds.index(k) for k in order), name
        assert runs["first"].tags["dagster/partition"] == runs["same_day"].tags["dagster/partition"] == day
        assert runs["other_day"].tags["dagster/partition"] == day_before
        daemon_log = next(p for p in processes if p.name == "daemon").log.read_text(errors="replace")
        assert "QueuedRunCoordinatorDaemon" in daemon_log and "Launched" in daemon_log, daemon_log[-2000:]

        materialized = {
            r.dagster_event.asset_key.to_user_string()
            for r in logs["first"]
            if r.is_dagster_event and r.dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION
        }
        assert {"raw_uploads", "normalized", "graph", "documents"} <= materialized
        assert client.get_run_status(first) == DagsterRunStatus.SUCCESS

        # runs in parallel per partition: the two days were in progress at the same time
        span = {name: (event_time(r, DagsterEventType.RUN_STARTING), event_time(r, DagsterEventType.RUN_SUCCESS))
                for name, r in logs.items()}
        assert span["first"][0] < span["other_day"][1] and span["other_day"][0] < span["first"][1], span
        # ... but never two runs of one day: the second waited until the first was done
        assert span["same_day"][0] >= span["first"][1], span

        # Neo4j writes serialized per pool: no two neo4j-pool steps ran at once, in any run
        pool_steps = neo4j_pool_steps()
        assert {"graph", "documents"} <= pool_steps
        per_run = {name: {k: w for k, w in step_windows(records).items() if k in pool_steps} for name, records in logs.items()}
        for name, steps in per_run.items():
            assert {"graph", "documents"} <= set(steps), f"{name}: {steps}"
        windows = sorted(w for steps in per_run.values() for w in steps.values())
        for (_, end), (start, _) in itertools.pairwise(windows):
            assert end <= start, f"neo4j pool steps overlapped: {windows}"
        pool = instance.event_log_storage.get_concurrency_info("neo4j")
        assert pool.slot_count == 1 and pool.claimed_slots == [] and pool.pending_steps == []
    finally:
        instance.dispose()

    # the data went where the production resources say: the bucket and the graph
    normalized = [o.key for o in store.list(NORMALIZED_PREFIX)]
    assert any(k.startswith(f"{NORMALIZED_PREFIX}messages/date={day}/") for k in normalized), normalized
    records, _, _ = clean_graph.execute_query(
        "MATCH (c:Conversation) RETURN count(c) AS n", database_=services["NEO4J_DATABASE"])
    assert records[0]["n"] == 3  # the same day twice: no duplicates
    # step logs are in the bucket (S3ComputeLogManager of deploy/dagster.yaml)
    assert list(store.list("dagster/compute-logs/")), "no step logs under dagster/compute-logs/"

    # the daemon's compose healthcheck passes against the same storage
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    liveness = run_bounded(in_venv(compose["services"]["daemon"]["healthcheck"]["test"][1:]), deployment["env"], timeout=60)
    assert liveness.returncode == 0, liveness.stdout + liveness.stderr
