"""Documents for RAG: bucket JSONL and Document nodes attached to their Conversation."""


from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from assets.common import NEO4J_POOL, NETWORK_RETRY, key_list
from assets.graph import graph
from assets.partitions import daily_partitions
from chatetl import pipeline
from resources.neo4j import Neo4jResource
from resources.object_store import ObjectStoreResource


@asset(
    partitions_def=daily_partitions,
    group_name="rag",
    deps=[graph],
    retry_policy=NETWORK_RETRY,
    pool=NEO4J_POOL,
    kinds={"neo4j", "s3"},
)
def documents(context: AssetExecutionContext, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:
    """One Document per conversation: the full visible text of the active branch, with role labels."""
    store = object_store.store
    result = pipeline.write_documents_partition(store, neo4j.driver, context.partition_key, neo4j.database)
    return MaterializeResult(
        metadata={
            "documents": result.items,
            "documents_in_graph": result.graph_written,
            "written": key_list(result.written),
            "unchanged": key_list(result.unchanged),
            "prefix": MetadataValue.path(store.uri(pipeline.RAG_PREFIX)),
        }
    )
