"""The production instance, run for real: PostgreSQL storage, the queued run coordinator, the daemon.

A real PostgreSQL server (Debian's `postgresql` package, started here by deploy/postgres.py),
a DAGSTER_HOME holding deploy/dagster.yaml (but for its run launcher: no Docker), and the processes of
deploy/docker-compose.yml started with the compose file's own commands: the storage setup
(dagster-init), the code location's gRPC server, the daemon and the webserver. A run of
ingest_job for the day of an uploaded sample is submitted through the webserver's GraphQL API,
waits in the queue, is started by the daemon and succeeds against the test Neo4j and S3;
with a run of another day and a second run of the same day, the run and pool limits of
deploy/dagster.yaml are seen at work.
"""

from __future__ import annotations

import itertools
from datetime import date, timedelta

import pytest
import yaml
from production_topology import DEPLOY, RUN_TIMEOUT, START_TIMEOUT, event_time, in_venv, run_bounded, submitter, wait_for
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
    assert any(k.startswith(f"{NORMALIZED_PREFIX}messages/date={group_of(info).day}/") for k in normalized), normalized
    records, _, _ = clean_graph.execute_query(
        "MATCH (c:Conversation) RETURN count(c) AS n", database_=services["NEO4J_DATABASE"])
    assert records[0]["n"] == 3  # the same day twice: no duplicates
    # step logs are in the bucket (S3ComputeLogManager of deploy/dagster.yaml)
    assert list(store.list("dagster/compute-logs/")), "no step logs under dagster/compute-logs/"

    # the daemon's compose healthcheck passes against the same storage
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    liveness = run_bounded(in_venv(compose["services"]["daemon"]["healthcheck"]["test"][1:]), deployment["env"], timeout=60)
    assert liveness.returncode == 0, liveness.stdout + liveness.stderr
