"""The Neo4j graph, loaded from the partition's normalized tables, and checked against them in the same step."""


from collections.abc import Iterator

from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
)

from assets.checks import GRAPH_CHECK_SPEC, graph_matches_normalized
from assets.config import GraphConfig
from assets.metadata import counts_table, md_list, run_and_totals
from assets.partitions import partition_days
from assets.policies import NEO4J_POOL, daily_asset
from chatetl.graph.load import LoadSummary, load_graph_partition
from chatetl.graph.retract import RetractSummary, apply_graph_retractions
from chatetl.graph.totals import graph_totals
from resources.neo4j import Neo4jResource
from resources.object_store import ObjectStoreResource


def load_graph(context: AssetExecutionContext, config: GraphConfig, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:
    loads, retracted = [], []
    for day in partition_days(context):  # what left the bucket leaves the graph first (chatetl.retractions)
        gone, taken_over = apply_graph_retractions(object_store.store, neo4j.driver, day, neo4j.database, deep=config.deep)
        retracted.append(gone)
        loads += [taken_over, load_graph_partition(object_store.store, neo4j.driver, day, neo4j.database, deep=config.deep)]
    summary = LoadSummary.total(loads)
    gone = RetractSummary.total(retracted)
    context.log.info(f"graph load: {summary.to_dict()}")
    if summary.conversations_failed:  # the rest of the day is loaded; these are tried again, alone, by the next run
        context.log.warning(f"graph load: {summary.conversations_failed} conversations failed: {summary.failures[:10]}")
    return MaterializeResult(
        metadata={
            **summary.to_dict(),
            "summary": counts_table(summary.to_dict()),
            "failed_conversations": md_list(summary.failures),
            "conversations_retracted": gone.conversations,
            **run_and_totals(
                {"conversations": summary.conversations_created + summary.conversations_updated, "messages": summary.messages_written},
                graph_totals(neo4j.driver, neo4j.database),
            ),
            "messages_retracted": gone.messages,
            "deep_mode": MetadataValue.bool(config.deep),
            "deep_mode_setting": MetadataValue.text("run config `deep` (default: CHATETL_GRAPH_DEEP)"),
            "neo4j": MetadataValue.text(f"{neo4j.uri} (database {neo4j.database})"),
        }
    )


def graph_asset(config_class: type[GraphConfig] = GraphConfig) -> AssetsDefinition:
    """The graph asset, its run config defaults those of `config_class` (GraphConfig.for_settings)."""

    # graph writers queue on one pool, so two runs never write the same conversation at once
    @daily_asset(group_name="graph", deps=["normalized"], pool=NEO4J_POOL, kinds={"neo4j"}, check_specs=[GRAPH_CHECK_SPEC])
    def graph(context: AssetExecutionContext, config: config_class, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> Iterator[MaterializeResult | AssetCheckResult]:  # type: ignore[valid-type]
        """Conversation, Message, HAS_MESSAGE, NEXT (active branch), REPLIES_TO (every branch); newest state wins.
        Deep mode (run config `deep`, default CHATETL_GRAPH_DEEP) adds a DecisionTrace with its TraceSteps per
        conversation with tool use."""
        if context.selected_asset_keys:
            yield load_graph(context, config, object_store, neo4j)
        yield from graph_matches_normalized(context, object_store, neo4j)

    return graph
