"""A pool of one slot admits one step at a time, even when run workers claim it at the same moment.

Four claimers, each with its own connection to a real PostgreSQL (as four run workers have),
take and give back the one slot of a pool as fast as they can; each counts itself in while it
holds the slot. Dagster 1.13's own claim lets two in at once within a few hundred claims here
(assets/pool_slots.py says why); the project's claim, installed by its Definitions, never does.

And a slot is never held by a dead run: on the local instance (`dagster dev` on
deploy/dagster.local.yaml, as `make ui` runs it), a run worker killed while its step holds the
`neo4j` slot is marked failed and its slot given back, so a re-execution gets the slot and ends.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from dagster_dev import HOLDER_LOCATION, pool_holder_dev, submit_hold_job, wait_for

pytestmark = pytest.mark.integration

CLAIMERS = 4
CLAIMS_EACH = 60


@pytest.fixture
def event_log(postgres):
    """Dagster's PostgreSQL event log storage in a database of its own on the test server."""
    from dagster_postgres.event_log import PostgresEventLogStorage

    db = f"pool_race_{uuid.uuid4().hex[:8]}"
    admin = postgres.connect("postgres")
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{db}"')  # our own generated name
    url = f"postgresql+psycopg2://{postgres.user}:{postgres.password}@127.0.0.1:{postgres.port}/{db}"
    storages = [PostgresEventLogStorage(url) for _ in range(CLAIMERS)]
    try:
        yield storages
    finally:
        for storage in storages:
            storage.dispose()
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE "{db}" WITH (FORCE)')
        admin.close()


def test_the_definitions_install_the_atomic_claim():
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    import assets.definitions  # noqa: F401  (the code location's import, as a run worker does)
    from assets.pool_slots import claim_free_slot

    assert SqlEventLogStorage._claim_concurrency_slot is claim_free_slot


def test_claimers_racing_for_one_slot_never_hold_it_together(event_log):
    import assets.definitions  # noqa: F401

    pool = "race"
    event_log[0].set_concurrency_slots(pool, 1)
    holders: list[str] = []
    most = [0]
    held = [0]
    lock = threading.Lock()
    errors: list[BaseException] = []

    def claimer(storage, number: int) -> None:
        run_id = str(uuid.uuid4())
        try:
            for n in range(CLAIMS_EACH):
                step = f"step_{number}_{n}"
                deadline = time.monotonic() + 60
                while not storage.claim_concurrency_slot(pool, run_id, step).is_claimed:
                    assert time.monotonic() < deadline, f"{step} never got the slot"
                    time.sleep(0.001)
                with lock:
                    holders.append(step)
                    most[0] = max(most[0], len(holders))
                    held[0] += 1
                time.sleep(0.002)  # the step's work
                with lock:
                    holders.remove(step)
                storage.free_concurrency_slot_for_step(run_id, step)
        except BaseException as e:  # noqa: BLE001 - reported by the test, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=claimer, args=(storage, i)) for i, storage in enumerate(event_log)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert not errors, errors
    assert held[0] == CLAIMERS * CLAIMS_EACH
    assert most[0] == 1, f"{most[0]} steps held the pool's one slot at once"
    info = event_log[0].get_concurrency_info(pool)
    assert info.slot_count == 1 and info.claimed_slots == [] and info.pending_steps == []


# ---------------------------------------------------------------------------------------------------
# A run worker killed while it holds a slot: the slot is given back, on the instance the project ships

REPO = Path(__file__).resolve().parents[2]
SLOT_FREED_WITHIN = 150.0  # the local instance: the code server marks the run failed, the daemon frees its slots


@pytest.fixture
def local_instance(tmp_path):
    """`dagster dev` as `make ui` runs it: deploy/dagster.local.yaml as the DAGSTER_HOME's dagster.yaml
    (deploy/dagster_home.py), on a code location whose one asset holds a `neo4j` pool slot."""
    sys.path.insert(0, str(REPO / "deploy"))
    from dagster_home import ensure

    home = tmp_path / "dagster_home"
    ensure(home)
    with pool_holder_dev(home, tmp_path) as dev:
        yield dev


def test_a_killed_run_worker_gives_its_neo4j_slot_back_on_the_local_instance(local_instance):
    from dagster import DagsterInstance, DagsterRunStatus

    holder, log = local_instance.holder, local_instance.log
    client = local_instance.client()
    (holder / "hold").write_text("")
    first = wait_for("the code location to take a run", lambda: submit_hold_job(client), 120, log)
    pid = local_instance.step_pid(first)
    instance = DagsterInstance.from_config(str(local_instance.home))
    try:
        assert [s.run_id for s in instance.event_log_storage.get_concurrency_info("neo4j").claimed_slots] == [first]
        os.kill(pid, signal.SIGKILL)  # the run worker dies with the slot in hand (OOM killer, a lost host)
        (holder / "hold").unlink()
        again = client.submit_job_execution("hold_job", repository_location_name=HOLDER_LOCATION, repository_name="__repository__")

        def finished():
            run = instance.get_run_by_id(again)
            return run if run is not None and run.is_finished else None

        run = wait_for("the re-execution to get the slot and finish", finished, SLOT_FREED_WITHIN, log)
        assert run.status == DagsterRunStatus.SUCCESS
        assert instance.get_run_by_id(first).status == DagsterRunStatus.FAILURE
        assert instance.event_log_storage.get_concurrency_info("neo4j").claimed_slots == []
    finally:
        instance.dispose()
