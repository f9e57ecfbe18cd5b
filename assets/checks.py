"""Asset checks: bad data stops here instead of flowing on.

The checks run in their asset's own step (the specs below, evaluated by the asset's
function right after it materialized), so they start no process of their own; their asset can
still be run without them, and they without it (a subsettable asset). A failed blocking check
fails the step, so what is downstream does not run.

On `normalized` (one pass over each upload's files): the contract's columns and types, unique
message ids per conversation, a gapless active-branch `seq`. A failure stops the graph and exports
of the run. On `graph`: the partition's conversations are in Neo4j with all their messages (or were
replaced by a newer state, which newest-wins allows); a failure stops the documents.

One check warns without blocking, in the step of `normalized` too: `uploads_read_cleanly`, per
partition (WARN severity), says which of the day's uploads could not be read, whole or in part,
what went to quarantine/, and which held what their reader did not know (format drift, kept per
upload in the ledger), so a bad upload or a platform's new export format shows in the lineage while
the readable rest flows on.
"""


from collections import Counter
from collections.abc import Iterator

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
)

from assets.metadata import counts_table, key_list, md_list, md_table
from assets.partitions import partition_days, partition_groups, upload_partitions
from chatetl.check_report import CheckReport
from chatetl.graph.checks import check_graph_partition
from chatetl.ingest.checks import check_normalized_partition
from chatetl.ingest.groups import UploadGroup
from chatetl.ingest.ledger import Ledger
from chatetl.layout import quarantine_prefix
from resources.neo4j import Neo4jResource
from resources.object_store import ObjectStoreResource

NORMALIZED = AssetKey("normalized")
GRAPH = AssetKey("graph")  # built per deployment by assets.graph.graph_asset

NORMALIZED_CHECKS = {
    "columns": ("columns_match_contract", "Every normalized Parquet file has exactly the contract's columns and types."),
    "unique": ("unique_message_ids", "No message id appears twice within one conversation."),
    "gapless": ("gapless_active_branch_seq", "Per conversation, seq is 0..n-1 on the active branch's visible turns, n = message_count."),
}


NORMALIZED_CHECK_SPECS = [AssetCheckSpec(name, asset=NORMALIZED, blocking=True, description=desc) for name, desc in NORMALIZED_CHECKS.values()]
UPLOADS_READ_CLEANLY_SPEC = AssetCheckSpec(
    "uploads_read_cleanly",
    asset=NORMALIZED,
    blocking=False,
    partitions_def=upload_partitions,
    description="Every upload of the day was read whole: none unreadable, no record refused, nothing in quarantine/, "
    "no format drift (fields or types the reader does not know) "
    "(WARN: the readable rest still flows on; see the upload list and quarantine/date=D/).",
)
GRAPH_CHECK_SPEC = AssetCheckSpec(
    "graph_matches_normalized",
    asset=GRAPH,
    blocking=True,
    description="The partition's conversations are in Neo4j with all their messages, unless a newer state replaced them (newest wins).",
)


def check_days(context: AssetExecutionContext, asset_key: AssetKey) -> list[str]:
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


def selected(context: AssetExecutionContext, spec: AssetCheckSpec) -> bool:
    """Whether the run asked for the check (a run may take an asset without its checks, or them alone)."""
    return spec.key in context.selected_asset_check_keys


def normalized_table_checks(context: AssetExecutionContext, object_store: ObjectStoreResource) -> Iterator[AssetCheckResult]:
    """The results of the tables' checks the run selected, over the days of its partitions."""
    specs = [spec for spec in NORMALIZED_CHECK_SPECS if selected(context, spec)]
    if not specs:
        return
    days = check_days(context, NORMALIZED)
    totals = {name: CheckReport() for name in NORMALIZED_CHECKS}
    for day in days:
        for name, report in check_normalized_partition(object_store.store, day).items():
            totals[name].add(report)
    by_name = {check_name: totals[name] for name, (check_name, _desc) in NORMALIZED_CHECKS.items()}
    for spec in specs:
        yield _result(by_name[spec.name], days, spec.name)


def graph_matches_normalized(context: AssetExecutionContext, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> Iterator[AssetCheckResult]:
    """The graph's check, when the run selected it."""
    if not selected(context, GRAPH_CHECK_SPEC):
        return
    days = check_days(context, GRAPH)
    total = CheckReport.total(check_graph_partition(object_store.store, neo4j.driver, day, neo4j.database) for day in days)
    yield _result(total, days, GRAPH_CHECK_SPEC.name)


def uploads_read_cleanly(context: AssetExecutionContext, object_store: ObjectStoreResource) -> Iterator[AssetCheckResult]:
    """The uploads' warning, when the run selected it."""
    if not selected(context, UPLOADS_READ_CLEANLY_SPEC):
        return
    store = object_store.store
    days = check_days(context, NORMALIZED)
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
    yield AssetCheckResult(
        check_name=UPLOADS_READ_CLEANLY_SPEC.name,
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

