"""Documents and chunks for RAG: bucket JSONL, Document and Chunk nodes with a full-text index."""


from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
)

from assets.config import DocumentsConfig, checked_at_launch
from assets.metadata import counts_table, key_list, md_fenced, md_list, md_text
from assets.partitions import partition_days
from assets.policies import NEO4J_POOL, daily_asset
from chatetl.graph.chunks import FULLTEXT_INDEX
from chatetl.layout import RAG_CHUNKS_PREFIX, RAG_DOCUMENTS_PREFIX
from chatetl.rag.embeddings import load_embedder
from chatetl.rag.partition import DocumentsResult
from chatetl.rag.retract import write_day_documents
from resources.neo4j import Neo4jResource
from resources.object_store import ObjectStoreResource


def write_documents(context: AssetExecutionContext, config: DocumentsConfig, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:
    store = object_store.store
    content = config.content()
    try:
        chunking = config.chunking()
    except ValueError as exc:  # a run config whose sizes do not fit together: retrying cannot help
        raise Failure(description=f"documents run config: {exc}", allow_retries=False) from exc
    embedder = load_embedder()
    total = DocumentsResult.total(
        write_day_documents(store, neo4j.driver, day, database=neo4j.database, content=content, chunking=chunking, embedder=embedder)
        for day in partition_days(context)
    )
    graph_chunks = total.chunks_in_graph
    context.log.info(f"documents: {total.documents}, chunks: {total.chunks}, in graph: {total.documents_in_graph} / {graph_chunks.chunks}")
    failures = total.failures + graph_chunks.failures
    if failures:  # the rest of the day is written; these are tried again, alone, by the next run
        context.log.warning(f"documents: {total.documents_failed + graph_chunks.failed} failed in the graph: {failures[:10]}")
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
            "documents_failed_in_graph": total.documents_failed + graph_chunks.failed,
            "failed_documents": md_list(failures),
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


def documents_asset(config_class: type[DocumentsConfig] = DocumentsConfig) -> AssetsDefinition:
    """The documents asset, its run config defaults those of `config_class` (DocumentsConfig.for_settings)."""

    @daily_asset(group_name="rag", deps=["graph"], pool=NEO4J_POOL, kinds={"neo4j", "s3"})
    def documents(context: AssetExecutionContext, config: config_class, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:  # type: ignore[valid-type]
        """One Document per conversation (the full visible text of the active branch, with role labels) and its
        overlapping chunks (turn and paragraph boundaries, message ids, char offsets): rag/documents/, rag/chunks/,
        Document and Chunk nodes (HAS_DOCUMENT, HAS_CHUNK, NEXT) and the `chunk_text` full-text index.
        The run config lets reasoning, tools, hidden context or branches in and sizes the chunks (defaults:
        CHATETL_RAG_INCLUDE_* / CHATETL_INCLUDE_*, CHATETL_CHUNK_MAX_CHARS / CHATETL_CHUNK_OVERLAP_CHARS);
        CHATETL_EMBEDDER adds embeddings."""
        return write_documents(context, config, object_store, neo4j)

    return checked_at_launch(documents, config_class)
