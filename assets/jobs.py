"""The main job: every asset of one partition (an uploader's uploads of a day, or a range), with their blocking checks."""

from dagster import AssetSelection, define_asset_job

from assets.executors import step_executor
from chatetl.settings import Settings

ingest_job = define_asset_job(
    "ingest_job",
    selection=AssetSelection.groups("ingest", "graph", "rag", "exports"),
    executor_def=step_executor(Settings.from_env()),
    description="Normalize every upload of a day (skipping those already done), check the tables, load the graph, "
    "check it, write Documents and exports. Started by upload_sensor, daily_ingest_schedule, or by hand.",
)
