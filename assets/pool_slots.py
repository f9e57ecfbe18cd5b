"""The pool's slot claim made atomic, so a pool of one slot admits one step at a time; and a new
pool's first use by two runs at once survived.

Dagster 1.13's SQL event log claims a pool slot in two statements: it selects a free slot row
(`FOR UPDATE SKIP LOCKED`), then sets the row's run and step by its id alone. On PostgreSQL the
storage runs in autocommit, so the select's row lock ends with the select: two run workers
that claim at the same moment both pick the one free row, both update it and both run. The
neo4j pool (assets/policies.py) then let two graph writers in at once, as the production
instance's test caught (tests/deploy/test_production_instance.py), and the claims race of
tests/deploy/test_pool_slots.py shows on a real PostgreSQL in seconds.

Here the update also requires the row to be still free (`step_key IS NULL`): PostgreSQL
re-checks that condition after waiting for the first claimer's update, so the second claimer
updates nothing, is told BLOCKED, and Dagster retries it as it retries any blocked step.

A pool without a limit row gets the instance's default on its first claim: two run workers that
first claim one new pool at the same moment both insert the row; on PostgreSQL the second insert's
unique violation aborts its transaction, the update Dagster then tries in it fails too, and the run
worker dies ("current transaction is aborted"). Here that loser finds the row the winner wrote.

The claim runs in the run worker, which imports this project's Definitions, so installing the
change here (from assets/policies.py, at import) covers every deployment: `dagster dev`, the
compose file and the Helm chart, whose instance settings cannot name another storage class.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as db
from dagster._core.storage.event_log.schema import ConcurrencySlotsTable
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._core.storage.sqlalchemy_compat import db_select
from dagster._utils.concurrency import ConcurrencySlotStatus


def claim_free_slot(storage: SqlEventLogStorage, concurrency_key: str, run_id: str, step_key: str) -> ConcurrencySlotStatus:
    """Take one free slot of the pool for the step, or BLOCKED when another claimer took it first."""
    slots = ConcurrencySlotsTable.c
    free = db.and_(slots.concurrency_key == concurrency_key, slots.step_key.is_(None), slots.deleted == False)
    with storage.index_connection() as conn:
        row = conn.execute(db_select([slots.id]).where(free).with_for_update(skip_locked=True).limit(1)).fetchone()
        if not row:
            return ConcurrencySlotStatus.BLOCKED
        taken = conn.execute(
            ConcurrencySlotsTable.update()
            .values(run_id=run_id, step_key=step_key)
            .where(db.and_(slots.id == row[0], free))
        ).rowcount
    return ConcurrencySlotStatus.CLAIMED if taken else ConcurrencySlotStatus.BLOCKED


def limit_once(initialize: Callable[[SqlEventLogStorage, str], bool]) -> Callable[[SqlEventLogStorage, str], bool]:
    """`initialize` (a pool's default limit written on its first use), but another run worker that wrote
    it first is no error."""

    def initialize_or_find(storage: SqlEventLogStorage, concurrency_key: str) -> bool:
        try:
            return initialize(storage, concurrency_key)
        except db.exc.DBAPIError:
            if not storage.get_concurrency_info(concurrency_key).slot_count:
                raise
            return True  # the other claimer's row and slots (it committed before this insert failed)

    return initialize_or_find


def install() -> None:
    """Make every SQL event log storage (PostgreSQL, MySQL, SQLite) claim slots atomically, and survive two
    first claims of one new pool."""
    SqlEventLogStorage._claim_concurrency_slot = claim_free_slot  # type: ignore[method-assign, assignment]
    if not getattr(SqlEventLogStorage.initialize_concurrency_limit_to_default, "chatetl_limit_once", False):
        patched = limit_once(SqlEventLogStorage.initialize_concurrency_limit_to_default)
        patched.chatetl_limit_once = True  # type: ignore[attr-defined]
        SqlEventLogStorage.initialize_concurrency_limit_to_default = patched  # type: ignore[method-assign, assignment]
