"""raw_uploads and normalized: which uploads belong to a group (an uploader's of a day), and their tables.

Both handle a range of partitions per run (backfills); every group is processed on its own: its
uploads from the upload index (chatetl.ingest.index), its ledger (chatetl.ingest.ledger) skipping
what is unchanged (chatetl.ingest.partition), so groups of one day run at the same time.
"""


import json
from collections.abc import Iterator
from typing import Any

from dagster import AssetCheckResult, AssetExecutionContext, Failure, MaterializeResult, MetadataValue

from assets.checks import NORMALIZED_CHECK_SPECS, UPLOADS_READ_CLEANLY_SPEC, normalized_table_checks, uploads_read_cleanly
from assets.config import NormalizedConfig
from assets.metadata import contract_metadata, counts_table, key_list, md_list, md_table, run_and_totals
from assets.partitions import partition_groups
from assets.policies import REPROCESS_TAG, daily_asset
from chatetl.attachments.sweep import sweep as sweep_attachments
from chatetl.ingest.groups import UploadGroup
from chatetl.ingest.index import DayUploads, find_uploads, info_from_dict, info_to_dict
from chatetl.ingest.ledger import parser_fingerprint
from chatetl.ingest.partition import PartitionIngest, ingest_partition
from chatetl.layout import (
    NORMALIZED_PREFIX,
    QUARANTINE_PREFIX,
    index_prefix,
    ledger_key,
    raw_manifest_key,
)
from chatetl.storage import ObjectInfo, ObjectStore, put_bytes_if_changed
from resources.object_store import ObjectStoreResource


def manifest_key(group: UploadGroup) -> str:
    return raw_manifest_key(group.day, group.uploader)


def group_uploads(day: DayUploads, group: UploadGroup) -> DayUploads:
    """What the day holds of one group's uploads."""
    return DayUploads(day.day, [u for u in day.uploads if group.holds(u.key)], day.how,
                      {k: v for k, v in day.moved.items() if group.holds(k)}, [k for k in day.gone if group.holds(k)])


@daily_asset(group_name="ingest", kinds={"s3"})
def raw_uploads(context: AssetExecutionContext, object_store: ObjectStoreResource) -> MaterializeResult:
    """The uploads of the partition's uploader (its first folder under raw/) whose current version arrived
    on the partition's day (UTC): key, ETag, size. Found in the upload index the sensor keeps
    (state/uploads/date=D/), or by one listing of raw/ when the index does not cover the day yet.
    Written to a manifest."""
    store = object_store.store
    groups = partition_groups(context)
    found, note = find_uploads(store, sorted({g.day for g in groups}))
    context.log.info(note)
    rows = []
    all_keys: list[str] = []
    for group in groups:
        d = group_uploads(found[group.day], group)
        manifest = {
            "day": group.day,
            **({"uploader": group.uploader} if group.uploader else {}),
            "found_by": d.how,
            "uploads": [info_to_dict(u) for u in d.uploads],
            "moved_to_other_days": d.moved,
            "gone": d.gone,
        }
        put_bytes_if_changed(store, manifest_key(group), json.dumps(manifest, indent=1, sort_keys=True).encode(), "application/json")
        rows.append((group.key, len(d.uploads), sum(u.size for u in d.uploads), d.how, len(d.moved), len(d.gone)))
        all_keys += [u.key for u in d.uploads]
    total = sum(r[1] for r in rows)
    return MaterializeResult(
        metadata={
            "summary": MetadataValue.text(
                f"{total} upload(s) of {groups[0].key}" + (f" .. {groups[-1].key}" if len(groups) > 1 else "") + f"; {note}"
            ),
            "uploads": total,
            "bytes": sum(r[2] for r in rows),
            "days": md_table(["partition", "uploads", "bytes", "found by", "replaced since (now on another day)", "deleted since"], rows),
            "keys": key_list(all_keys),
            "manifest": MetadataValue.path(store.uri(manifest_key(groups[-1]))),
            "upload_index": MetadataValue.path(store.uri(index_prefix(groups[-1].day))),
        }
    )


def _manifest_uploads(store: ObjectStore, group: UploadGroup) -> list[ObjectInfo]:
    if store.head(manifest_key(group)) is None:  # normalized run alone: find them now
        return group_uploads(find_uploads(store, [group.day])[0][group.day], group).uploads
    return [info_from_dict(d) for d in json.loads(store.get_bytes(manifest_key(group)))["uploads"]]


def _summary(r: PartitionIngest, keys: list[str]) -> str:
    span = keys[0] + (f" .. {keys[-1]}" if len(keys) > 1 else "")
    parts = [
        f"{span}: {r.uploads} upload(s): {len(r.processed)} normalized, {len(r.skipped)} skipped as unchanged",
        f"{r.conversations} conversation(s) and {r.messages} message(s) read",
    ]
    if r.conversations_in_skipped:
        parts.append(f"{r.conversations_in_skipped} conversation(s) in unchanged uploads")
    if r.retracted:
        parts.append(f"{len(r.retracted)} upload(s) retracted (replaced on another day or deleted)")
    parts.append(f"{len(r.errors)} error(s), {len(r.quarantined)} quarantined file(s)")
    if r.drift:
        parts.append(f"format drift: {sum(r.drift.values())} unknown item(s)")
    return "; ".join(parts)


def wants_reprocess(context: AssetExecutionContext, config: NormalizedConfig) -> bool:
    return config.reprocess or str(context.run.tags.get(REPROCESS_TAG, "")).lower() in ("1", "true", "yes")


def normalized_metadata(store: ObjectStore, r: PartitionIngest, groups: list[UploadGroup], per_group: list[PartitionIngest]) -> dict[str, Any]:
    sources = sorted(r.sources.items())
    return {
        "summary": MetadataValue.text(_summary(r, [g.key for g in groups])),
        "uploads": r.uploads,
        "uploads_normalized": len(r.processed),
        "uploads_skipped_unchanged": len(r.skipped),
        "uploads_retracted": len(r.retracted),
        "conversations": r.conversations,
        "messages": r.messages,
        "conversations_in_skipped_uploads": r.conversations_in_skipped,
        **run_and_totals({"conversations_in_partition": r.conversations},
                         {"conversations_in_partition": r.conversations + r.conversations_in_skipped}),
        "rows_written": r.rows_written["conversations"] + r.rows_written["messages"],
        "bytes_read": r.bytes_read,
        "bytes_written": r.bytes_written,
        "errors": len(r.errors),
        "per_source": md_table(
            ["source", "uploads", "skipped uploads", "conversations read", "new", "updated", "unchanged", "removed", "in skipped uploads", "messages"],
            [(s, c.uploads, c.uploads_skipped, c.conversations, c.new, c.updated, c.unchanged, c.removed, c.skipped, c.messages) for s, c in sources],
        ),
        "per_day": md_table(
            ["partition", "uploads", "normalized", "skipped", "conversations", "messages", "errors", "seconds"],
            [(g.key, d.uploads, len(d.processed), len(d.skipped), d.conversations, d.messages, len(d.errors), f"{d.seconds:.1f}") for g, d in zip(groups, per_group, strict=True)],
        ),
        "preview": md_table(
            ["platform", "title", "turns", "updated", "upload"],
            [(p["platform"], p["title"], p["message_count"], p["updated_at"], p["upload"]) for p in r.preview],
        ),
        "error_list": md_list(r.errors),
        "error_reasons": counts_table(r.error_reasons, "reason"),
        "unreadable_uploads": key_list(r.failed_uploads),
        "quarantined": key_list(r.quarantined),
        "format_drift": counts_table(r.drift, "unknown type or field"),
        "records_skipped": counts_table(r.records_skipped, "reason"),
        "formats": counts_table(r.formats, "format"),
        "retracted": md_table(["upload", "why"], sorted(r.retracted.items())),
        "duplicate_states": md_list(r.duplicates),  # one id twice in an upload: the newest kept (model.state_order)
        "kept_newer_states": md_list(r.kept_newer),  # an older version over a newer one: the newer state kept
        "written": key_list(r.written),
        "unchanged": key_list(r.unchanged),
        "tables": MetadataValue.path(store.uri(NORMALIZED_PREFIX)),
        "quarantine": MetadataValue.path(store.uri(QUARANTINE_PREFIX)),
        "ledger": MetadataValue.path(store.uri(ledger_key(groups[-1].day, groups[-1].uploader))),
        "parser": MetadataValue.text(parser_fingerprint()),
        "seconds": round(r.seconds, 2),
    }


@daily_asset(
    group_name="ingest",
    deps=[raw_uploads],
    kinds={"parquet", "s3"},
    code_version=parser_fingerprint(),  # the UI marks partitions read by an older parser as stale
    metadata=contract_metadata(),  # the Parquet contract, column by column
    check_specs=[*NORMALIZED_CHECK_SPECS, UPLOADS_READ_CLEANLY_SPEC],
)
def normalized(context: AssetExecutionContext, config: NormalizedConfig, object_store: ObjectStoreResource) -> Iterator[MaterializeResult | AssetCheckResult]:
    """Every upload of the partition (an uploader's of a day) read into the normalized tables, conversations and
    messages, as Parquet at `normalized/<table>/date=D/<upload-id>.parquet` (bad parts to `quarantine/date=D/`).
    Uploads already normalized from the same bytes by the same parser are skipped (the group's
    ledger under state/ledger/date=D); `reprocess` (or the run tag `chatetl/reprocess=true`) redoes them.
    The code version is the parser's fingerprint: after a reader change the UI shows every
    partition as stale, and rematerializing one normalizes its uploads again."""
    if context.selected_asset_keys:
        yield normalize(context, config, object_store)
    yield from normalized_table_checks(context, object_store)
    yield from uploads_read_cleanly(context, object_store)


def normalize(context: AssetExecutionContext, config: NormalizedConfig, object_store: ObjectStoreResource) -> MaterializeResult:
    store = object_store.store
    groups = partition_groups(context)
    reprocess = wants_reprocess(context, config)
    per_group = []
    for group in groups:
        result = ingest_partition(store, group.day, _manifest_uploads(store, group), uploader=group.uploader, reprocess=reprocess,
                                  warn=context.log.warning)
        context.log.info(_summary(result, [group.key]))
        per_group.append(result)
    if swept := sweep_attachments(store):  # (what an earlier sweep kept for an ingest then running)
        context.log.info(f"{len(swept)} object(s) of attachments no upload refers to removed")
    total = PartitionIngest.total(per_group, groups[0].day)
    metadata = normalized_metadata(store, total, groups, per_group)
    with_uploads = [g.key for g, d in zip(groups, per_group, strict=True) if d.uploads]
    empty = [g.key for g, d in zip(groups, per_group, strict=True) if d.uploads and not d.useful]
    if empty and len(empty) == len(with_uploads):
        # a run that read nothing useful must not look like a success (and retrying cannot help)
        raise Failure(
            description=f"no conversation could be read from the uploads of {', '.join(empty)}: see error_list",
            metadata=metadata,
            allow_retries=False,
        )
    if empty:
        # a backfill range: one unreadable day must not hold back the days that read fine,
        # but it is named loudly (log, summary, metadata) for whoever reads the run
        context.log.error(f"no conversation could be read from the uploads of {', '.join(empty)}: see error_list")
        metadata["days_with_nothing_readable"] = MetadataValue.md("\n".join(f"- **{day}**" for day in empty))
        metadata["summary"] = MetadataValue.text(f"NOTHING READABLE on {', '.join(empty)}; " + str(metadata["summary"].value))
    return MaterializeResult(metadata=metadata)
