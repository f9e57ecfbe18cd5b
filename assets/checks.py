"""Blocking asset checks: bad data stops here instead of flowing on.

On `normalized` (one step, one pass over each upload's files): the contract's columns and
types, unique message ids per conversation, a gapless active-branch `seq`. A failure stops
the graph and exports of the run. On `graph`: the partition's conversations are in Neo4j
with all their messages (or were replaced by a newer state, which newest-wins allows);
a failure stops the documents.

One check warns without blocking: `uploads_read_cleanly`, per partition (WARN severity), says
which of the day's uploads could not be read, whole or in part, what went to quarantine/, and
which held what their reader did not know (format drift, kept per upload in the ledger), so a
bad upload or a platform's new export format shows in the lineage while the readable rest flows on.
"""


from collections import Counter
from collections.abc import Iterator

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    asset_check,
    multi_asset_check,
)

from assets.ingest import normalized
from assets.metadata import counts_table, key_list, md_list, md_table
from assets.partitions import partition_days, partition_groups
from assets.policies import NETWORK_RETRY
from chatetl.check_report import CheckReport
from chatetl.graph.checks import check_graph_partition
from chatetl.ingest.checks import check_normalized_partition
from chatetl.ingest.groups import UploadGroup
from chatetl.ingest.ledger import Ledger
from chatetl.layout import quarantine_prefix
from resources.neo4j import Neo4jResource
from resources.object_store import ObjectStoreResource

GRAPH = AssetKey("graph")  # built per deployment by assets.graph.graph_asset

NORMALIZED_CHECKS = {
    "columns": ("columns_match_contract", "Every normalized Parquet file has exactly the contract's columns and types."),
    "unique": ("unique_message_ids", "No message id appears twice within one conversation."),
    "gapless": ("gapless_active_branch_seq", "Per conversation, seq is 0..n-1 on the active branch's visible turns, n = message_count."),
}


def check_days(context: AssetCheckExecutionContext, asset_key: AssetKey) -> list[str]:
    """The days a check covers: its run's partitions; run alone (no partition), the latest
    materialized partition of the asset."""
    if context.has_partition_key or context.has_partition_key_range:
        return partition_days(context)
    latest = context.instance.get_latest_materialization_event(asset_key)
    partition = latest.dagster_event.partition if latest is not None and latest.dagster_event is not None else None
    return [UploadGroup.parse(partition).day] if partition else []


def _result(report: CheckReport, days: list[str], check_name: str | None = None) -> AssetCheckResult:
    return AssetCheckResult(
        check_name=check_name,
        passed=report.passed,
        description=("passed" if report.passed else f"{report.problem_count} problem(s)") + f" on {', '.join(days) or 'no partition (nothing materialized yet)'}",
        metadata={
            "problems": report.problem_count,
            "problem_list": md_list(report.problems),
            "counts": counts_table(report.counts),
            **{k: int(v) for k, v in report.counts.items()},
        },
    )


@multi_asset_check(
    specs=[AssetCheckSpec(name, asset=normalized, blocking=True, description=desc) for name, desc in NORMALIZED_CHECKS.values()],
    retry_policy=NETWORK_RETRY,
)
def normalized_table_checks(context: AssetCheckExecutionContext, object_store: ObjectStoreResource) -> Iterator[AssetCheckResult]:
    days = check_days(context, normalized.key)
    totals = {name: CheckReport() for name in NORMALIZED_CHECKS}
    for day in days:
        for name, report in check_normalized_partition(object_store.store, day).items():
            totals[name].add(report)
    for name, (check_name, _desc) in NORMALIZED_CHECKS.items():
        yield _result(totals[name], days, check_name)


@asset_check(
    asset=GRAPH,
    blocking=True,
    retry_policy=NETWORK_RETRY,
    description="The partition's conversations are in Neo4j with all their messages, unless a newer state replaced them (newest wins).",
)
def graph_matches_normalized(context: AssetCheckExecutionContext, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> AssetCheckResult:
    days = check_days(context, GRAPH)
    total = CheckReport.total(check_graph_partition(object_store.store, neo4j.driver, day, neo4j.database) for day in days)
    return _result(total, days)


@asset_check(
    asset=normalized,
    blocking=False,
    partitions_def=normalized.partitions_def,
    retry_policy=NETWORK_RETRY,
    description="Every upload of the day was read whole: none unreadable, no record refused, nothing in quarantine/, "
    "no format drift (fields or types the reader does not know) "
    "(WARN: the readable rest still flows on; see the upload list and quarantine/date=D/).",
)
def uploads_read_cleanly(context: AssetCheckExecutionContext, object_store: ObjectStoreResource) -> AssetCheckResult:
    store = object_store.store
    days = check_days(context, normalized.key)
    groups = partition_groups(context) if context.has_partition_key or context.has_partition_key_range else [UploadGroup(day) for day in days]
    rows, unreadable, quarantined, drifted = [], [], [], []
    drift: Counter[str] = Counter()
    for group in groups:
        uids = set()
        for key, entry in sorted(Ledger.load(store, group.day, group.uploader).entries.items()):
            if not group.holds(key):
                continue
            uids.add(entry.upload_id)
            if entry.errors or entry.quarantined or entry.drift:
                rows.append((group.day, key, entry.conversations, entry.errors, entry.quarantined, sum(entry.drift.values())))
            if entry.errors and not entry.conversations:
                unreadable.append(key)
            if entry.drift:
                drifted.append(key)
                drift.update(entry.drift)
        # quarantine/date=D/ holds every uploader's parts: a group's check names its own uploads'
        quarantined += [o.key for uid in sorted(uids) for o in store.list(quarantine_prefix(group.day, uid))]
    partly = [r for r in rows if r[3] and r[2]]
    passed = not rows and not quarantined
    said = (
        "every upload read whole"
        if passed
        else f"{len(unreadable)} unreadable upload(s), {len(partly)} read in part, {len(quarantined)} file(s) in quarantine, "
        f"{len(drifted)} with format drift"
    )
    return AssetCheckResult(
        passed=passed,
        severity=AssetCheckSeverity.WARN,
        description=f"{said} on {', '.join(days) or 'no partition (nothing materialized yet)'}",
        metadata={
            "unreadable_uploads": len(unreadable),
            "uploads_read_in_part": len(partly),
            "quarantined_files": len(quarantined),
            "uploads_with_drift": len(drifted),
            "uploads_with_problems": md_table(["day", "upload", "conversations read", "errors", "quarantined parts", "unknown items (drift)"], rows),
            "quarantine": key_list(quarantined),
            "format_drift": counts_table(drift, "unknown type or field"),
        },
    )

