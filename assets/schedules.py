"""A daily schedule that materializes yesterday's groups of uploads, catching anything the sensor missed.

At 01:00 UTC it requests a run of each partition of the previous day: the groups its uploads
make (from the upload index, or one listing of raw/ when the index does not cover the day),
adding the partitions the sensor has not, and those the day has already. When the upload
index covers that day and holds no upload, there is nothing to catch and the tick says so
instead of starting an empty run.
"""


from datetime import UTC, datetime, timedelta

from dagster import DefaultScheduleStatus, RunRequest, ScheduleEvaluationContext, SkipReason, schedule

from assets.jobs import ingest_job
from assets.partitions import in_partitions, upload_partitions
from chatetl.ingest.groups import SEPARATOR, by_group
from chatetl.ingest.index import day_is_covered, find_uploads, indexed_uploads, read_coverage
from resources.object_store import ObjectStoreResource

PARTITIONS = upload_partitions.name or ""


def previous_day(when: datetime | None) -> str:
    when = (when or datetime.now(UTC)).astimezone(UTC)
    return (when - timedelta(days=1)).date().isoformat()


@schedule(
    job=ingest_job,
    cron_schedule="0 1 * * *",
    execution_timezone="UTC",
    name="daily_ingest_schedule",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every day at 01:00 UTC: the previous day's partitions (uploads the sensor missed, a day's final state).",
)
def daily_schedule(context: ScheduleEvaluationContext, object_store: ObjectStoreResource) -> list[RunRequest] | SkipReason:
    day = previous_day(context.scheduled_execution_time)
    if not in_partitions(day):
        return SkipReason(f"{day} is before the first partition")
    store = object_store.store
    if day_is_covered(day, read_coverage(store)) and not indexed_uploads(store, day, compact=False):
        return SkipReason(f"no uploads on {day} (the upload index covers that day)")
    found, _ = find_uploads(store, [day])
    keys = {group.key for group in by_group(found[day].uploads)}
    known = context.instance.get_dynamic_partitions(PARTITIONS)
    keys |= {k for k in known if k == day or k.startswith(day + SEPARATOR)}
    context.instance.add_dynamic_partitions(PARTITIONS, sorted(keys - set(known)))
    if not keys:
        return SkipReason(f"no uploads on {day}")
    return [RunRequest(run_key=f"daily:{key}", partition_key=key, tags={"chatetl/trigger": "daily_ingest_schedule"}) for key in sorted(keys)]
