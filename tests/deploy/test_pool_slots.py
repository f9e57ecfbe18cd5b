"""A pool of one slot admits one step at a time, even when run workers claim it at the same moment.

Four claimers, each with its own connection to a real PostgreSQL (as four run workers have),
take and give back the one slot of a pool as fast as they can; each counts itself in while it
holds the slot. Dagster 1.13's own claim lets two in at once within a few hundred claims here
(assets/pool_slots.py says why); the project's claim, installed by its Definitions, never does.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

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
