"""Daily partitions by upload date (UTC): one partition processes every upload of its day.

About 365 partitions a year stays far below Dagster's comfortable limits however many
uploads arrive (tens of thousands of uploads are still a few hundred partitions);
`end_offset=1` makes today's partition exist so the sensor can run it as uploads land.

Backfills over a date range run up to `BACKFILL_DAYS_PER_RUN` days per run for the assets
that handle partition ranges (raw_uploads, normalized and the checks): one run per week
instead of one per day, and each day inside still skips the uploads its ledger has seen.
The first day and the days per run are deployment settings (CHATETL_PARTITIONS_START,
CHATETL_BACKFILL_DAYS_PER_RUN), read when the code location loads.
"""

from typing import Any

from dagster import BackfillPolicy, DailyPartitionsDefinition

from chatetl.settings import Settings

_settings = Settings.from_env()
START_DATE = _settings.partitions_start
BACKFILL_DAYS_PER_RUN = _settings.backfill_days_per_run

daily_partitions = DailyPartitionsDefinition(start_date=START_DATE, end_offset=1, timezone="UTC")

# For assets whose code loops over context.partition_keys (a range of days per run).
range_backfill_policy = BackfillPolicy.multi_run(max_partitions_per_run=BACKFILL_DAYS_PER_RUN)


def partition_days(context: Any) -> list[str]:
    """The days a run covers: one partition, or a range (backfills of range-aware assets)."""
    return list(context.partition_keys)
