"""Documents and chunks for RAG, in two steps: `rag_files` cuts and embeds on CPU outside the Neo4j pool and
writes rag/ in the bucket; `documents`, in the pool, writes the Document and Chunk nodes from those files."""


from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
)

from assets.config import DocumentsConfig, checked_at_launch
from assets.metadata import counts_table, key_list, md_fenced, md_list, md_text, run_and_totals
from assets.partitions import partition_days
from assets.policies import NEO4J_POOL, RAG_FILES_POOL, daily_asset
from chatetl.graph.chunks import FULLTEXT_INDEX
from chatetl.graph.totals import graph_totals
from chatetl.layout import RAG_CHUNKS_PREFIX, RAG_DOCUMENTS_PREFIX, RAG_EMBEDDINGS_PREFIX
from chatetl.rag.embeddings import load_embedder
from chatetl.rag.partition import DocumentsResult
from chatetl.rag.retract import load_day_files, write_day_files
from resources.neo4j import Neo4jResource
from resources.object_store import ObjectStoreResource


def _preview(total: DocumentsResult) -> MetadataValue:
    if not total.first_document:
        return MetadataValue.md("_no conversations_")
    doc = total.first_document
    return MetadataValue.md(
        f"**{md_text(doc['title']).replace('*', '')}** ({doc['content_length']} characters, {doc['chunk_count']} chunks)\n\n" + md_fenced(doc["content"])
    )


def write_rag_files(context: AssetExecutionContext, config: DocumentsConfig, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:
    store = object_store.store
    content = config.content()
    try:
        chunking = config.chunking()
    except ValueError as exc:  # a run config whose sizes do not fit together: retrying cannot help
        raise Failure(description=f"documents run config: {exc}", allow_retries=False) from exc
    embedder = load_embedder()
    total = DocumentsResult.total(
        write_day_files(store, neo4j.driver, day, database=neo4j.database, content=content, chunking=chunking, embedder=embedder,
                        progress=context.log.info)
        for day in partition_days(context)
    )
    context.log.info(f"rag files: {total.documents} documents, {total.chunks} chunks, {total.embedded} embedded")
    return MaterializeResult(
        metadata={
            "documents": total.documents,
            "chunks": total.chunks,
            "documents_without_text": total.empty_documents,
            "embedded_chunks": total.embedded,
            "embeddings_reused": total.embeddings_reused,
            "embedding_seconds": round(total.embedding_seconds, 3),
            "embeddings": MetadataValue.text("on (CHATETL_EMBEDDER)" if embedder else "off: set CHATETL_EMBEDDER to a local model's callable"),
            "content": counts_table(content.model_dump(), "setting"),
            "chunking": MetadataValue.text(f"max {chunking.max_chars} chars, overlap {chunking.overlap_chars}"),
            "written": key_list(total.written),
            "unchanged": key_list(total.unchanged),
            "documents_prefix": MetadataValue.path(store.uri(RAG_DOCUMENTS_PREFIX)),
            "chunks_prefix": MetadataValue.path(store.uri(RAG_CHUNKS_PREFIX)),
            "embeddings_prefix": MetadataValue.path(store.uri(RAG_EMBEDDINGS_PREFIX)),
            "preview": _preview(total),
        }
    )


def write_documents(context: AssetExecutionContext, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:
    total = DocumentsResult.total(
        load_day_files(object_store.store, neo4j.driver, day, database=neo4j.database, progress=context.log.info) for day in partition_days(context)
    )
    graph_chunks = total.chunks_in_graph
    context.log.info(f"documents: {total.documents}, chunks: {total.chunks}, in graph: {total.documents_in_graph} / {graph_chunks.chunks}")
    failures = total.failures + graph_chunks.failures
    if failures:  # the rest of the day is written; these are tried again, alone, by the next run
        context.log.warning(f"documents: {total.documents_failed + graph_chunks.failed} failed in the graph: {failures[:10]}")
    return MaterializeResult(
        metadata={
            "documents": total.documents,
            "chunks": total.chunks,
            **run_and_totals(  # written to the graph by this run; what it holds now
                {"documents": total.documents_in_graph, "chunks": graph_chunks.chunks},
                {k: v for k, v in graph_totals(neo4j.driver, neo4j.database).items() if k in ("documents", "chunks")},
            ),
            "chunks_unchanged_in_graph": graph_chunks.unchanged,
            "stale_chunks_removed": graph_chunks.deleted,
            "documents_with_another_state_in_graph": graph_chunks.skipped_other_state,
            "documents_failed_in_graph": total.documents_failed + graph_chunks.failed,
            "failed_documents": md_list(failures),
            "fulltext_index": MetadataValue.text(f"{FULLTEXT_INDEX}: CALL db.index.fulltext.queryNodes('{FULLTEXT_INDEX}', $words)"),
            "preview": _preview(total),
        }
    )


def rag_files_asset(config_class: type[DocumentsConfig] = DocumentsConfig) -> AssetsDefinition:
    """The rag_files asset, its run config defaults those of `config_class` (DocumentsConfig.for_settings)."""

    # no pool: the graph is only read here (which state each conversation holds, vectors it has), so graph
    # loads of other runs go on while this step spends its CPU on chunks and embeddings
    @daily_asset(group_name="rag", deps=["graph"], pool=RAG_FILES_POOL, kinds={"s3"})
    def rag_files(context: AssetExecutionContext, config: config_class, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:  # type: ignore[valid-type]
        """Chunks and embeddings, outside the Neo4j pool: one Document per conversation (the full visible text of
        the active branch, with role labels) and per project document, memory or canvas, its overlapping chunks
        (turn and paragraph boundaries, message ids, char offsets) and their vectors, into rag/documents/,
        rag/chunks/ and rag/embeddings/. Unchanged chunks keep their vectors; nothing is written to Neo4j (the
        `documents` step does). The run config lets reasoning, tools, hidden context or branches in and sizes the chunks (defaults: CHATETL_RAG_INCLUDE_* /
        CHATETL_INCLUDE_*, CHATETL_CHUNK_MAX_CHARS / CHATETL_CHUNK_OVERLAP_CHARS); CHATETL_EMBEDDER chooses the model."""
        return write_rag_files(context, config, object_store, neo4j)

    return checked_at_launch(rag_files, config_class)


def documents_asset() -> AssetsDefinition:
    """The documents asset: the graph's Documents and Chunks from what rag_files stored."""

    @daily_asset(group_name="rag", deps=["rag_files"], pool=NEO4J_POOL, kinds={"neo4j"})
    def documents(context: AssetExecutionContext, object_store: ObjectStoreResource, neo4j: Neo4jResource) -> MaterializeResult:
        """Document and Chunk nodes (HAS_DOCUMENT, HAS_CHUNK, NEXT), the `chunk_text` full-text and `chunk_embedding`
        vector indexes, written in the Neo4j pool from the rag/ files `rag_files` stored: nothing is cut or embedded
        here, and chunks the graph holds already are not written again."""
        return write_documents(context, object_store, neo4j)

    return documents
