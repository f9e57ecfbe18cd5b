"""raw_uploads and normalized: which uploads belong to a partition, and their normalized tables."""


import json

from dagster import AssetExecutionContext, Failure, MaterializeResult, MetadataValue, asset

from assets.common import NETWORK_RETRY, counts_table, key_list
from assets.partitions import daily_partitions
from chatetl import pipeline
from chatetl.storage import ObjectInfo
from resources.object_store import ObjectStoreResource

MANIFEST_PREFIX = "manifests/raw_uploads/"


def manifest_key(day: str) -> str:
    return f"{MANIFEST_PREFIX}date={day}.json"


@asset(partitions_def=daily_partitions, group_name="ingest", retry_policy=NETWORK_RETRY, kinds={"s3"})
def raw_uploads(context: AssetExecutionContext, object_store: ObjectStoreResource) -> MaterializeResult:
    """The uploads that arrived in the bucket's raw/ prefix on this partition's day (key, ETag, size)."""
    day = context.partition_key
    store = object_store.store
    uploads = pipeline.uploads_for_partition(store, day)
    manifest = [{"key": u.key, "etag": u.etag, "size": u.size, "last_modified": u.last_modified.isoformat()} for u in uploads]
    pipeline.put_bytes_if_changed(store, manifest_key(day), json.dumps(manifest, indent=2).encode(), "application/json")
    return MaterializeResult(
        metadata={
            "uploads": len(uploads),
            "bytes": sum(u.size for u in uploads),
            "keys": key_list([u.key for u in uploads]),
            "manifest": MetadataValue.path(store.uri(manifest_key(day))),
        }
    )


@asset(partitions_def=daily_partitions, group_name="ingest", deps=[raw_uploads], retry_policy=NETWORK_RETRY, kinds={"parquet"})
def normalized(context: AssetExecutionContext, object_store: ObjectStoreResource) -> MaterializeResult:
    """Every upload of the day read into the normalized tables (conversations, messages) as Parquet."""
    day = context.partition_key
    store = object_store.store
    manifest = json.loads(store.get_bytes(manifest_key(day)))
    totals = {"conversations": 0, "messages": 0, "errors": 0, "bytes_written": 0}
    drift: dict[str, int] = {}
    skipped: dict[str, int] = {}
    formats: dict[str, int] = {}
    errors: list[str] = []
    written: list[str] = []
    unchanged: list[str] = []
    quarantined: list[str] = []
    for item in manifest:
        info = store.head(item["key"])
        if info is None:
            context.log.warning(f"upload {item['key']} is gone since the manifest was made")
            continue
        result = pipeline.normalize_upload(store, info, day)
        report = result.report
        totals["conversations"] += result.conversations
        totals["messages"] += result.messages
        totals["errors"] += len(report.errors)
        totals["bytes_written"] += result.bytes_written
        for name, target in ((report.drift, drift), (report.skipped, skipped), (report.formats, formats)):
            for k, v in name.items():
                target[k] = target.get(k, 0) + v
        errors += [str(e) for e in report.errors]
        written += result.written
        unchanged += result.unchanged
        quarantined += result.quarantined
        for e in report.errors:
            context.log.warning(str(e))
    metadata = {
        "uploads": len(manifest),
        "conversations": totals["conversations"],
        "messages": totals["messages"],
        "errors": totals["errors"],
        "bytes_written": totals["bytes_written"],
        "formats": counts_table(formats),
        "format_drift": counts_table(drift),
        "skipped": counts_table(skipped),
        "error_list": MetadataValue.md("\n".join(f"- {e}" for e in errors[:100]) or "_none_"),
        "written": key_list(written),
        "unchanged": key_list(unchanged),
        "quarantined": key_list(quarantined),
        "tables": MetadataValue.path(store.uri(pipeline.NORMALIZED_PREFIX)),
    }
    if manifest and totals["conversations"] == 0:
        # a run that read nothing useful must not look like a success
        raise Failure(description=f"no conversation could be read from {len(manifest)} upload(s)", metadata=metadata)
    return MaterializeResult(metadata=metadata)
