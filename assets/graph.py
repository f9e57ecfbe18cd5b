"""The Neo4j graph, loaded from the partition's normalized tables."""


from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from assets.common import NEO4J_POOL, NETWORK_RETRY, counts_table, partition_days
from assets.ingest import normalized
from assets.partitions import daily_partitions, range_backfill_policy
from chatetl.graph.connection import DEEP_ENV, deep_mode_from_env
from chatetl.graph.load import LoadSummary, load_graph_partition
from resources.neo4j import Neo4jResource
from resources.object_store import ObjectStoreResource


@asset(
    partitions_def=daily_partitions,
    group_name="graph",
    deps=[normalized],
    retry_policy=NETWORK_RETRY,
    pool=NEO4J_POOL,  # graph writers queue on one pool, so two runs never write the same conversation at once
    kinds={"neo4j"},
    backfill_policy=range_backfill_policy,  # a backfill run covers several days, loaded one after the other
)
def graph(context: AssetExecutionContext, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:
    """Conversation, Message, HAS_MESSAGE, NEXT (active branch), REPLIES_TO (every branch); newest state wins.
    Deep mode (`CHATETL_GRAPH_DEEP=1`) adds a DecisionTrace with its TraceSteps per conversation with tool use."""
    deep = deep_mode_from_env()
    summary = LoadSummary()
    for day in partition_days(context):
        summary.add(load_graph_partition(object_store.store, neo4j.driver, day, neo4j.database, deep=deep))
    context.log.info(f"graph load: {summary.to_dict()}")
    return MaterializeResult(
        metadata={
            **summary.to_dict(),
            "summary": counts_table(summary.to_dict()),
            "deep_mode": MetadataValue.bool(deep),
            "deep_mode_setting": MetadataValue.text(DEEP_ENV),
            "neo4j": MetadataValue.text(f"{neo4j.uri} (database {neo4j.database})"),
        }
    )
