"""Daily partitions by upload date (UTC): one partition processes every upload of its day.

About 365 partitions a year stays far below Dagster's comfortable limits however many
uploads arrive; `end_offset=1` makes today's partition exist so the sensor can run it.
"""

import os

from dagster import DailyPartitionsDefinition

START_DATE = os.environ.get("CHATETL_PARTITIONS_START", "2024-01-01")

daily_partitions = DailyPartitionsDefinition(start_date=START_DATE, end_offset=1, timezone="UTC")
