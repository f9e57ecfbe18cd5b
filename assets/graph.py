"""The Neo4j graph, loaded from the partition's normalized tables."""


from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from assets.common import NEO4J_POOL, NETWORK_RETRY
from assets.ingest import normalized
from assets.partitions import daily_partitions
from chatetl import pipeline
from resources.neo4j import Neo4jResource
from resources.object_store import ObjectStoreResource


@asset(
    partitions_def=daily_partitions,
    group_name="graph",
    deps=[normalized],
    retry_policy=NETWORK_RETRY,
    pool=NEO4J_POOL,
    kinds={"neo4j"},
)
def graph(context: AssetExecutionContext, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:
    """Conversation, Message, HAS_MESSAGE, NEXT (active branch), REPLIES_TO (every branch); newest state wins."""
    summary = pipeline.load_graph_partition(object_store.store, neo4j.driver, context.partition_key, neo4j.database)
    return MaterializeResult(
        metadata={
            **summary.to_dict(),
            "neo4j": MetadataValue.text(f"{neo4j.uri} (database {neo4j.database})"),
        }
    )
