"""Blocking asset checks: bad data stops here instead of flowing on.

On `normalized` (one step, one pass over each upload's files): the contract's columns and
types, unique message ids per conversation, a gapless active-branch `seq`. A failure stops
the graph and exports of the run. On `graph`: the partition's conversations are in Neo4j
with all their messages (or were replaced by a newer state, which newest-wins allows);
a failure stops the documents.
"""


from collections.abc import Iterator

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSpec,
    AssetKey,
    asset_check,
    multi_asset_check,
)

from assets.ingest import normalized
from assets.metadata import counts_table, md_list
from assets.partitions import partition_days
from assets.policies import NETWORK_RETRY
from chatetl.check_report import CheckReport
from chatetl.graph.checks import check_graph_partition
from chatetl.ingest.checks import check_normalized_partition
from chatetl.ingest.groups import UploadGroup
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
