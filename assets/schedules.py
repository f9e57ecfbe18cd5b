"""A daily schedule that materializes yesterday's partition, catching anything the sensor missed."""

from dagster import build_schedule_from_partitioned_job

from assets.jobs import ingest_job

daily_schedule = build_schedule_from_partitioned_job(ingest_job, hour_of_day=1, minute_of_hour=0, name="daily_ingest_schedule")
