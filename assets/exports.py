"""Exported files per conversation, the partition's training file and zip, in the bucket's exports/ prefix."""


from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from assets.common import NETWORK_RETRY, counts_table, key_list, md_fenced, partition_days
from assets.ingest import normalized
from assets.partitions import daily_partitions, range_backfill_policy
from chatetl.exports.partition import ExportPlan, ExportsResult, write_partition_exports
from chatetl.layout import EXPORTS_PREFIX
from chatetl.selection import ContentOptions
from resources.object_store import ObjectStoreResource


@asset(partitions_def=daily_partitions, group_name="exports", deps=[normalized], retry_policy=NETWORK_RETRY, kinds={"s3"}, backfill_policy=range_backfill_policy)
def exports(context: AssetExecutionContext, object_store: ObjectStoreResource) -> MaterializeResult:
    """Every conversation as chat-export/1 JSON, sharegpt/1 JSON, fenced Markdown, note Markdown (front matter),
    YAML and HTML (exports/<format>/<platform>-<title>-<date>-<id>.<ext>, newest state wins), the partition's
    ShareGPT JSONL training file and a zip of the chosen formats. CHATETL_EXPORT_FORMATS and
    CHATETL_EXPORT_ZIP_FORMATS choose; CHATETL_EXPORT_INCLUDE_* / CHATETL_INCLUDE_* let more than the
    visible branch in."""
    store = object_store.store
    plan = ExportPlan.from_env()
    content = ContentOptions.from_env("EXPORT")
    results: list[ExportsResult] = [write_partition_exports(store, day, plan=plan, content=content) for day in partition_days(context)]
    files: dict[str, int] = {}
    for r in results:
        for fmt, n in r.files.items():
            files[fmt] = files.get(fmt, 0) + n
    written = [k for r in results for k in r.written]
    unchanged = [k for r in results for k in r.unchanged]
    deleted = [k for r in results for k in r.deleted]
    preview_key = next((r.preview_key for r in results if r.preview_key), None)
    # the exported Markdown is upload text: shown as its source, never rendered (links, images, HTML)
    preview = md_fenced(store.get_bytes(preview_key).decode("utf-8", "replace"), 3000) if preview_key else "_no conversations_"
    metadata = {
        "conversations": sum(r.conversations for r in results),
        "conversations_without_turns": sum(r.empty for r in results),
        "newer_state_already_exported": sum(r.skipped_older for r in results),
        "files": sum(files.values()),
        "files_per_format": counts_table(files, "format"),
        "written": key_list(written),
        "written_count": len(written),
        "unchanged_count": len(unchanged),
        "stale_removed": key_list(deleted),
        "training_records": sum(r.training_records for r in results),
        "training_files": key_list([r.training_key for r in results if r.training_key and r.training_records]),
        "zips": key_list([r.bundle_key for r in results if r.bundle_key]),
        "zip_formats": MetadataValue.text(", ".join(plan.bundle_formats) or "none"),
        "content": counts_table(content.model_dump(), "setting"),
        "prefix": MetadataValue.path(store.uri(EXPORTS_PREFIX)),
        "preview": MetadataValue.md(preview),
    }
    for fmt in plan.formats:
        metadata[f"prefix_{fmt.replace('-', '_')}"] = MetadataValue.path(store.uri(f"{EXPORTS_PREFIX}{fmt}/"))
    if preview_key:
        metadata["preview_key"] = MetadataValue.path(store.uri(preview_key))
    return MaterializeResult(metadata=metadata)
