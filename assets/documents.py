"""Documents and chunks for RAG: bucket JSONL, Document and Chunk nodes with a full-text index."""


from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from assets.common import NEO4J_POOL, NETWORK_RETRY, counts_table, key_list, md_fenced, md_text, partition_days
from assets.graph import graph
from assets.partitions import daily_partitions, range_backfill_policy
from chatetl.graph.chunks import FULLTEXT_INDEX
from chatetl.layout import RAG_CHUNKS_PREFIX, RAG_DOCUMENTS_PREFIX
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.embeddings import load_embedder
from chatetl.rag.partition import DocumentsResult, write_partition_documents
from chatetl.selection import ContentOptions
from resources.neo4j import Neo4jResource
from resources.object_store import ObjectStoreResource


@asset(
    partitions_def=daily_partitions,
    group_name="rag",
    deps=[graph],
    retry_policy=NETWORK_RETRY,
    pool=NEO4J_POOL,
    kinds={"neo4j", "s3"},
    backfill_policy=range_backfill_policy,  # a backfill run covers several days: each is written on its own
)
def documents(context: AssetExecutionContext, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:
    """One Document per conversation (the full visible text of the active branch, with role labels) and its
    overlapping chunks (turn and paragraph boundaries, message ids, char offsets): rag/documents/, rag/chunks/,
    Document and Chunk nodes (HAS_DOCUMENT, HAS_CHUNK, NEXT) and the `chunk_text` full-text index.
    CHATETL_RAG_INCLUDE_* / CHATETL_INCLUDE_* let reasoning, tools, hidden context or branches in;
    CHATETL_CHUNK_MAX_CHARS / CHATETL_CHUNK_OVERLAP_CHARS size the chunks; CHATETL_EMBEDDER adds embeddings."""
    store = object_store.store
    content = ContentOptions.from_env("RAG")
    chunking = ChunkOptions.from_env()
    embedder = load_embedder()
    total = DocumentsResult()
    for day in partition_days(context):
        r = write_partition_documents(store, neo4j.driver, day, database=neo4j.database, content=content, chunking=chunking, embedder=embedder)
        total.documents += r.documents
        total.chunks += r.chunks
        total.empty_documents += r.empty_documents
        total.written += r.written
        total.unchanged += r.unchanged
        total.documents_in_graph += r.documents_in_graph
        total.chunks_in_graph.add(r.chunks_in_graph)
        total.embedded += r.embedded
        total.first_document = total.first_document or r.first_document
    graph_chunks = total.chunks_in_graph
    context.log.info(f"documents: {total.documents}, chunks: {total.chunks}, in graph: {total.documents_in_graph} / {graph_chunks.chunks}")
    preview = "_no conversations_"
    if total.first_document:
        doc = total.first_document
        preview = f"**{md_text(doc['title']).replace('*', '')}** ({doc['content_length']} characters, {doc['chunk_count']} chunks)\n\n" + md_fenced(doc["content"])
    return MaterializeResult(
        metadata={
            "documents": total.documents,
            "chunks": total.chunks,
            "documents_without_text": total.empty_documents,
            "documents_in_graph": total.documents_in_graph,
            "chunks_in_graph": graph_chunks.chunks,
            "stale_chunks_removed": graph_chunks.deleted,
            "documents_with_another_state_in_graph": graph_chunks.skipped_other_state,
            "embedded_chunks": total.embedded,
            "embeddings": MetadataValue.text("on (CHATETL_EMBEDDER)" if embedder else "off: set CHATETL_EMBEDDER to a local model's callable"),
            "content": counts_table(content.model_dump(), "setting"),
            "chunking": MetadataValue.text(f"max {chunking.max_chars} chars, overlap {chunking.overlap_chars}"),
            "fulltext_index": MetadataValue.text(f"{FULLTEXT_INDEX}: CALL db.index.fulltext.queryNodes('{FULLTEXT_INDEX}', $words)"),
            "written": key_list(total.written),
            "unchanged": key_list(total.unchanged),
            "documents_prefix": MetadataValue.path(store.uri(RAG_DOCUMENTS_PREFIX)),
            "chunks_prefix": MetadataValue.path(store.uri(RAG_CHUNKS_PREFIX)),
            "preview": MetadataValue.md(preview),
        }
    )
