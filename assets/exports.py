"""Exported files per conversation, written to the bucket's exports/ prefix."""


from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from assets.common import NETWORK_RETRY, key_list
from assets.ingest import normalized
from assets.partitions import daily_partitions
from chatetl import pipeline
from resources.object_store import ObjectStoreResource


@asset(partitions_def=daily_partitions, group_name="exports", deps=[normalized], retry_policy=NETWORK_RETRY, kinds={"markdown", "s3"})
def markdown_exports(context: AssetExecutionContext, object_store: ObjectStoreResource) -> MaterializeResult:
    """One chat-export Markdown file per conversation."""
    store = object_store.store
    result = pipeline.write_markdown_partition(store, context.partition_key)
    preview = ""
    if result.written or result.unchanged:
        first = (result.written or result.unchanged)[0]
        preview = store.get_bytes(first).decode()[:3000]
    return MaterializeResult(
        metadata={
            "files": result.items,
            "written": key_list(result.written),
            "unchanged": key_list(result.unchanged),
            "prefix": MetadataValue.path(store.uri(pipeline.EXPORTS_PREFIX + "md/")),
            "preview": MetadataValue.md(preview or "_no conversations_"),
        }
    )
