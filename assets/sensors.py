"""The upload sensor: a new or replaced object under raw/ starts a run of its group's partition.

A group is an uploader's uploads of one day (chatetl.ingest.groups); the sensor adds a group's
partition when it first finds its uploads (assets/partitions.py), so uploads of different
uploaders on one day run at the same time.

Each tick is one bounded step of chatetl.ingest.scan.discover (at most CHATETL_SENSOR_MAX_KEYS
keys listed and CHATETL_SENSOR_MAX_SECONDS seconds; the position rides in the cursor, so a
backlog drains over several ticks): new keys after the greatest key seen, then the rolling
re-scan that finds replaced objects. The changes of one group found in one tick become one
run request, recorded in the upload index (state/uploads/date=D/). Run keys come from
key + ETag (a batch: its day and the digest of its key@ETag list; the same bytes uploaded
again on a later day: key@ETag@date=D), and each upload version is in exactly one batch:
the same upload never runs twice, a replaced one runs again.
When a run the sensor requested for that group is still queued, the new uploads join it
instead (it reads the day's index when it starts, after this tick wrote it): a burst of
uploads, or a backlog drained over several ticks, gives one waiting run per group, not one
per tick.
An upload deleted from raw/ while its day still holds it (chatetl.ingest.deletions) starts a run
of its group in the same way, which retracts it: it leaves the graph, rag/ and exports/ one tick
after its deletion, not when another upload of its day happens to arrive.
"""


import time
from collections.abc import Callable

from dagster import (
    DagsterInvariantViolationError,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from assets.jobs import ingest_job
from assets.partitions import in_partitions, upload_partitions
from chatetl.ingest.deletions import gone_uploads
from chatetl.ingest.groups import by_group
from chatetl.ingest.index import UploadBatch, publish_coverage, record_batches
from chatetl.ingest.scan import ScanCursor, check_cursor, discover
from chatetl.settings import Settings
from resources.object_store import ObjectStoreResource

# A new upload waits for the tick that finds it: half this interval on average, a wait on its way to being
# searchable that only the interval sets. A quiet tick is bounded (one listing after the greatest key, one
# capped step of the re-scan, one page of location records: PAGE in chatetl.ingest.deletions), so ticking
# often costs requests, not scans of the bucket.
TICK_SECONDS = 10

# Runs the sensor asks for are fresh uploads someone waits to search: the queue starts them, and the pools
# (assets/policies.py) hand them their slots, before a backfill's or the daily schedule's (priority 0).
FRESH_UPLOAD_PRIORITY = "1"


def queued_run_for(context: SensorEvaluationContext, partition: str) -> str | None:
    """A run this sensor requested for the partition that has not started yet (it will read the index)."""
    try:
        instance = context.instance
    except DagsterInvariantViolationError:  # evaluated without an instance (e.g. a unit test)
        return None
    records = instance.get_run_records(
        filters=RunsFilter(
            job_name=ingest_job.name,
            statuses=[DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED],
            tags={"dagster/partition": partition, "dagster/sensor_name": context.sensor_name or "upload_sensor"},
        ),
        limit=5,
    )
    for record in records:
        if "dagster/parent_run_id" not in record.dagster_run.tags:  # a re-execution may run only some steps
            return record.dagster_run.run_id
    return None


def run_key_for(context: SensorEvaluationContext, batch: UploadBatch, partition: str) -> str:
    """The batch's run key, unless that `key@etag` already ran for another day: identical bytes
    uploaded again on a later day move the upload there, and Dagster skips a run key it has
    seen, so that version gets `key@etag@date=D` (still one run key per upload version)."""
    key = batch.run_key
    if len(batch.uploads) != 1:
        return key  # a batch's run key already names its day
    try:
        instance = context.instance
    except DagsterInvariantViolationError:  # evaluated without an instance (e.g. a unit test)
        return key
    records = instance.get_run_records(
        filters=RunsFilter(tags={"dagster/sensor_name": context.sensor_name or "upload_sensor", "dagster/run_key": key}),
        limit=1,
    )
    if records and records[0].dagster_run.tags.get("dagster/partition") != partition:
        return f"{key}@date={batch.day}"
    return key


@sensor(
    job=ingest_job,
    minimum_interval_seconds=TICK_SECONDS,
    default_status=DefaultSensorStatus.RUNNING,
    description="Starts a run of an uploader's day (a partition it adds) when uploads under raw/ are new, replaced or "
    "deleted (bounded scan, cursor).",
)
def upload_sensor(context: SensorEvaluationContext, object_store: ObjectStoreResource) -> SensorResult:
    store = object_store.store
    settings = Settings.from_env()  # the per-tick caps, CHATETL_SENSOR_MAX_KEYS and CHATETL_SENSOR_MAX_SECONDS
    cursor, reset = check_cursor(store, ScanCursor.from_json(context.cursor))
    if reset:
        context.log.warning("the upload index is gone (state/ deleted?): scanning raw/ from the start to rebuild it")
    found = discover(
        store,
        cursor,
        now=time.time(),
        max_keys=settings.sensor_max_keys,  # at least 1: 0 would never move the scan
        max_seconds=settings.sensor_max_seconds,
    )
    for key in found.ignored[:20]:
        context.log.warning(f"ignored {key!r}: not a usable upload key (.., backslash, ...); rename it to have it read")
    batches = {}
    for group, uploads in by_group(found.changes).items():
        if not in_partitions(group.day):
            context.log.warning(f"{len(uploads)} upload(s) of {group.key} are before the partitions (CHATETL_PARTITIONS_START?)")
            continue
        batches[group.key] = UploadBatch(group.day, tuple(uploads))
    record_batches(store, list(batches.values()))
    if found.coverage is not None:
        publish_coverage(store, found.coverage)
    gone, found.cursor.gone_pos = gone_uploads(store, found.every_upload, found.cursor.gone_pos)
    requests: list[RunRequest] = []
    joined: list[str] = []

    def ask(partition: str, what: str, run_key: Callable[[], str], tags: dict[str, str]) -> None:
        """A run of the partition, unless one this sensor requested still waits in the queue (it reads the index when it starts)."""
        waiting = queued_run_for(context, partition)
        if waiting:
            joined.append(f"{what} joined queued run {waiting}")
        else:
            requests.append(RunRequest(run_key=run_key(), partition_key=partition, tags=tags))

    for key, batch in batches.items():
        ask(key, f"{len(batch.uploads)} upload(s) of {key}", lambda b=batch, k=key: run_key_for(context, b, k), {  # type: ignore[misc]
            "chatetl/trigger": "upload_sensor",
            "dagster/priority": FRESH_UPLOAD_PRIORITY,
            "chatetl/uploads": str(len(batch.uploads)),
            "chatetl/upload": batch.uploads[0].key[:200],
            "chatetl/index_batch": batch.index_key,
        })
    requested = set(batches)  # (a run of the group retracts its deletions too)
    for upload in gone:
        key = upload.group.key
        if key in requested or not in_partitions(upload.day):
            continue
        requested.add(key)
        ask(key, f"the deletion of {upload.key}", lambda u=upload: u.run_key,  # type: ignore[misc]
            {"chatetl/trigger": "upload_sensor", "dagster/priority": FRESH_UPLOAD_PRIORITY, "chatetl/deleted": upload.key[:200]})
    status = (
        f"listed {found.listed} key(s); {len(found.changes)} new or replaced upload(s); {len(gone)} deleted"
        + "".join(f"; {j}" for j in joined)
        + (f"; stopped by the {found.stopped_by} cap, continuing next tick" if found.stopped_by else "")
        + ("; re-scan cycle completed" if found.cycle_completed else "")
    )
    context.log.info(status)
    return SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[upload_partitions.build_add_request(sorted(requested))] if requested else None,
        cursor=found.cursor.to_json(),
        skip_reason=None if requests else (f"no new run needed ({status})" if joined else f"no new or replaced uploads under raw/ ({status})"),
    )
