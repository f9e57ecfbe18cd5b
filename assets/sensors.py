"""The upload sensor: a new or replaced object under raw/ starts a run for its day's partition.

The cursor is a watermark (last-modified, key) of the newest upload already requested;
run keys are key + ETag, so the same upload never runs twice and a replaced one runs again.
Work per tick is bounded; a backlog drains over several ticks.
"""


import json

from dagster import RunRequest, SensorEvaluationContext, SensorResult, SkipReason, sensor

from assets.jobs import ingest_job
from chatetl import pipeline
from resources.object_store import ObjectStoreResource

MAX_RUNS_PER_TICK = 50


@sensor(job=ingest_job, minimum_interval_seconds=30, description="Starts a run for each new or replaced upload under raw/.")
def upload_sensor(context: SensorEvaluationContext, object_store: ObjectStoreResource) -> SensorResult | SkipReason:
    cursor = json.loads(context.cursor) if context.cursor else {"modified": "", "key": ""}
    watermark = (cursor["modified"], cursor["key"])
    fresh = sorted(
        (info for info in object_store.store.list(pipeline.RAW_PREFIX) if (info.last_modified.isoformat(), info.key) > watermark),
        key=lambda i: (i.last_modified.isoformat(), i.key),
    )[:MAX_RUNS_PER_TICK]
    if not fresh:
        return SkipReason("no new uploads under raw/")
    requests = [
        RunRequest(
            run_key=f"{info.key}@{info.etag}",
            partition_key=pipeline.partition_of(info),
            tags={"chatetl/upload": info.key[:200], "chatetl/etag": info.etag},
        )
        for info in fresh
    ]
    last = fresh[-1]
    return SensorResult(run_requests=requests, cursor=json.dumps({"modified": last.last_modified.isoformat(), "key": last.key}))
