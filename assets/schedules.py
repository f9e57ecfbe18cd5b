"""A daily schedule that materializes yesterday's partition, catching anything the sensor missed.

At 01:00 UTC it requests the previous day (not today's partition, which exists early
because of end_offset=1). When the upload index covers that day and holds no upload,
there is nothing to catch and the tick says so instead of starting an empty run.
"""


from datetime import UTC, datetime, timedelta

from dagster import DefaultScheduleStatus, RunRequest, ScheduleEvaluationContext, SkipReason, schedule

from assets.jobs import ingest_job
from assets.partitions import daily_partitions
from chatetl.ingest.index import day_is_covered, indexed_uploads, read_coverage
from resources.object_store import ObjectStoreResource


def previous_day(when: datetime | None) -> str:
    when = (when or datetime.now(UTC)).astimezone(UTC)
    return (when - timedelta(days=1)).date().isoformat()


@schedule(
    job=ingest_job,
    cron_schedule="0 1 * * *",
    execution_timezone="UTC",
    name="daily_ingest_schedule",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every day at 01:00 UTC: the previous day's partition (uploads the sensor missed, a day's final state).",
)
def daily_schedule(context: ScheduleEvaluationContext, object_store: ObjectStoreResource) -> RunRequest | SkipReason:
    day = previous_day(context.scheduled_execution_time)
    if not daily_partitions.has_partition_key(day):
        return SkipReason(f"{day} is before the first partition")
    store = object_store.store
    if day_is_covered(day, read_coverage(store)) and not indexed_uploads(store, day, compact=False):
        return SkipReason(f"no uploads on {day} (the upload index covers that day)")
    return RunRequest(run_key=f"daily:{day}", partition_key=day, tags={"chatetl/trigger": "daily_ingest_schedule"})
