"""Exported files per conversation, the partition's training file and zip, in the bucket's exports/ prefix."""


from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
)

from assets.config import ExportsConfig
from assets.metadata import counts_table, key_list, md_fenced, run_and_totals
from assets.partitions import partition_days
from assets.policies import EXPORTS_POOL, daily_asset
from chatetl.exports.archive import ARCHIVE, write_archive
from chatetl.exports.partition import ExportsResult, write_day_exports
from chatetl.layout import EXPORTS_PREFIX
from resources.object_store import ObjectStoreResource


def write_exports(context: AssetExecutionContext, config: ExportsConfig, object_store: ObjectStoreResource) -> MaterializeResult:
    store = object_store.store
    plan, content = config.plan(), config.content()
    # the archive page covers the whole bucket: rebuilt once, after the run's days
    per_day = [write_day_exports(store, day, plan=plan, content=content, archive_page=False, progress=context.log.info) for day in partition_days(context)]
    total = ExportsResult.total(per_day)
    archive = write_archive(store) if ARCHIVE in plan.formats else None
    if archive is not None:
        total.files[ARCHIVE] = 1
        (total.written if archive.written else total.unchanged).append(archive.key)
    # the exported Markdown is upload text: shown as its source, never rendered (links, images, HTML)
    preview = md_fenced(store.get_bytes(total.preview_key).decode("utf-8", "replace"), 3000) if total.preview_key else "_no conversations_"
    metadata: dict[str, Any] = {
        "conversations": total.conversations,
        "conversations_without_turns": total.empty,
        "newer_state_already_exported": total.skipped_older,
        "files": total.items,
        "files_per_format": counts_table(total.files, "format"),
        "written": key_list(total.written),
        "written_count": len(total.written),
        # the archive page counts every conversation of the bucket
        **run_and_totals({"conversations": total.conversations}, {"conversations": archive.conversations if archive else None}),
        "unchanged_count": len(total.unchanged),
        "stale_removed": key_list(total.deleted),
        "training_records": total.training_records,
        "training_files": key_list([r.training_key for r in per_day if r.training_key and r.training_records]),
        "zips": key_list([r.bundle_key for r in per_day if r.bundle_key]),
        "formats": MetadataValue.text(", ".join(plan.formats)),
        "zip_formats": MetadataValue.text(", ".join(plan.bundle_formats) or "none"),
        "content": counts_table(content.model_dump(), "setting"),
        "prefix": MetadataValue.path(store.uri(EXPORTS_PREFIX)),
        "preview": MetadataValue.md(preview),
    }
    for fmt in plan.formats:
        metadata[f"prefix_{fmt.replace('-', '_')}"] = MetadataValue.path(store.uri(f"{EXPORTS_PREFIX}{fmt}/"))
    if archive is not None:
        metadata["archive"] = MetadataValue.path(store.uri(archive.key))
        metadata["archive_conversations"] = archive.conversations
    if total.preview_key:
        metadata["preview_key"] = MetadataValue.path(store.uri(total.preview_key))
    return MaterializeResult(metadata=metadata)


def exports_asset(config_class: type[ExportsConfig] = ExportsConfig) -> AssetsDefinition:
    """The exports asset, its run config defaults those of `config_class` (ExportsConfig.for_settings)."""

    @daily_asset(group_name="exports", deps=["normalized"], pool=EXPORTS_POOL, kinds={"s3"})
    def exports(context: AssetExecutionContext, config: config_class, object_store: ObjectStoreResource) -> MaterializeResult:  # type: ignore[valid-type]
        """Every conversation as chat-export/1 JSON, sharegpt/1 JSON, fenced Markdown, note Markdown (front matter),
        YAML and HTML (`exports/<format>/<platform>-<title>-<date>-<id>.<ext>`, newest state wins), the partition's
        ShareGPT JSONL training file, a zip of the chosen formats and the archive page of the whole bucket
        (`exports/archive/index.html`: every conversation, searchable, with charts). The run config chooses the formats, the zip's
        formats and which internals go out (defaults: CHATETL_EXPORT_FORMATS, CHATETL_EXPORT_ZIP_FORMATS,
        CHATETL_EXPORT_INCLUDE_* / CHATETL_INCLUDE_*)."""
        return write_exports(context, config, object_store)

    return exports
