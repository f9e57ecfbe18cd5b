"""The main job: every asset of one daily partition (or a range of days), with their blocking checks."""

from dagster import AssetSelection, define_asset_job, multiprocess_executor

# Each step in its own process (a step that runs out of memory fails alone), forked from a
# server that has already imported Dagster and chatetl: a step starts in well under a second
# instead of re-importing everything (several seconds per step with `spawn`).
step_processes = multiprocess_executor.configured({"start_method": {"forkserver": {}}}, name="forkserver_multiprocess")

ingest_job = define_asset_job(
    "ingest_job",
    selection=AssetSelection.groups("ingest", "graph", "rag", "exports"),
    executor_def=step_processes,
    description="Normalize every upload of a day (skipping those already done), check the tables, load the graph, "
    "check it, write Documents and exports. Started by upload_sensor, daily_ingest_schedule, or by hand.",
)
