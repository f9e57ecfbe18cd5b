"""Partitions: one per group of uploads (an uploader's uploads of one day, chatetl.ingest.groups).

A partition exists only where uploads arrived: the sensor (or the daily schedule) adds the
group's key (`2026-03-01/alice`, or `2026-03-01` for uploads at the top of raw/) when it finds
them, so the UI lists the days and uploaders that have data and no day nobody uploaded on.
Their count follows the uploads (at most one per uploader and day: tens of thousands of uploads
a year stay under Dagster's advice of 100,000 partitions an asset). Groups of one day are
different partitions, so their runs go on at the same time; the steps that write what a whole
day shares wait for each other in their pools (assets/policies.py).

Backfills run up to `BACKFILL_DAYS_PER_RUN` partitions per run for the assets that handle
partition ranges (each partition inside still skips the uploads its ledger has seen); the
day-wide assets (graph, rag_files, documents, exports, checks) take each day of the run once.
Uploads before CHATETL_PARTITIONS_START are left out.
"""

from typing import Any

from dagster import BackfillPolicy, DynamicPartitionsDefinition

from chatetl.ingest.groups import UploadGroup
from chatetl.settings import Settings

_settings = Settings.from_env()
START_DATE = _settings.partitions_start
BACKFILL_DAYS_PER_RUN = _settings.backfill_days_per_run

upload_partitions = DynamicPartitionsDefinition(name="upload_groups")

# For assets whose code loops over context.partition_keys (a range of partitions per run).
range_backfill_policy = BackfillPolicy.multi_run(max_partitions_per_run=BACKFILL_DAYS_PER_RUN)


def in_partitions(day: str) -> bool:
    """Whether a day's uploads get partitions (CHATETL_PARTITIONS_START and after)."""
    return day >= START_DATE


def partition_groups(context: Any) -> list[UploadGroup]:
    """The groups of uploads a run covers: one partition, or a range (backfills of range-aware assets)."""
    return [UploadGroup.parse(key) for key in context.partition_keys]


def partition_days(context: Any) -> list[str]:
    """The days a run covers, each once: what the day-wide assets write."""
    return sorted({group.day for group in partition_groups(context)})
