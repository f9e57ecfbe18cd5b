"""The main job: every asset of one daily partition."""

from dagster import AssetSelection, define_asset_job


ingest_job = define_asset_job(
    "ingest_job",
    selection=AssetSelection.groups("ingest", "graph", "rag", "exports"),
    description="Normalize every upload of a day, load the graph, write Documents and exports.",
)
