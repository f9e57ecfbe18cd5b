"""`chatetl load`: inputs into the Neo4j graph (Conversations, Messages, traces) and their Documents, and what
they keep beside the chats (projects, memories, canvases)."""

from __future__ import annotations

import json
import sys
import time

import click

from chatetl.cli.inputs import input_meter, read_inputs
from chatetl.cli.options import (
    INPUT_ERRORS,
    OK,
    USAGE_OR_GRAPH,
    quiet_and_progress,
    report_errors,
    with_examples,
)
from chatetl.cli.terminal import one_line
from chatetl.graph.connection import neo4j_settings, open_driver
from chatetl.graph.keepsakes import load_keepsakes, project_links
from chatetl.graph.load import DEFAULT_BATCH_MESSAGES, load_conversations
from chatetl.model import Conversation
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.embeddings import load_embedder
from chatetl.rag.keepsake_documents import keepsake_documents
from chatetl.rag.partition import DocumentsResult, process_documents
from chatetl.readers import ReadReport
from chatetl.selection import ContentOptions
from chatetl.settings import Settings
from chatetl.tables.keepsakes import keepsake_rows


@click.command(
    short_help="A Neo4j graph of the chats, with their text for search.",
    epilog=with_examples(
        "make services    # a local Neo4j, or set NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD",
        "chatetl load ~/Downloads/chatgpt-export.zip",
        "chatetl search \"rail trip\"",
    ),
)
@click.argument("inputs", nargs=-1, required=True)
@click.option("--deep/--no-deep", default=None, help="Also record each tool call as DecisionTrace and TraceStep nodes (default: CHATETL_GRAPH_DEEP, else off).")
@click.option("--documents/--no-documents", default=True, show_default=True, help="Also load each chat's text as a Document with search chunks (what `chatetl search` finds).")
@click.option("--batch-messages", type=click.IntRange(min=1), default=DEFAULT_BATCH_MESSAGES, show_default=True, help="Messages written per transaction (lower it for a small server).")
@quiet_and_progress
def load(inputs: tuple[str, ...], deep: bool | None, documents: bool, batch_messages: int, quiet: bool, progress: bool | None) -> None:
    """Load chat exports (INPUTS: zips, folders, files, s3://bucket/prefix) into a Neo4j graph:
    Conversation and Message nodes, and each chat's text as a Document in searchable chunks. The
    server is NEO4J_URI (NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE); a rerun writes only what changed.
    Projects, memories and canvases arrive when the load reads them: of two states of one that tie on
    their own time, the one a later load read wins."""
    from neo4j.exceptions import DriverError, Neo4jError

    try:
        settings = Settings.from_env()
        conf = neo4j_settings(settings)
        content, chunking = ContentOptions.from_env("RAG"), ChunkOptions.from_env()
    except ValueError as exc:  # a SettingError, or chunk sizes that do not fit together
        raise click.UsageError(one_line(str(exc))) from exc
    database = conf["database"] or None
    deep = settings.graph_deep if deep is None else deep
    report = ReadReport()
    docs = DocumentsResult()
    embedder = load_embedder(settings.embedder or "")
    driver = open_driver(settings=settings)
    meter = input_meter(inputs, progress, quiet, "load")

    links: list[dict[str, str]] = []  # the conversations whose record names their project (chatetl.graph.keepsakes)

    def load_batch_documents(batch: list[Conversation]) -> None:
        links.extend(project_links({"conversation_key": c.key, "platform": c.platform, "meta": json.dumps(c.meta)}
                                   for c in batch if c.meta.get("project_uuid")))
        # the same Documents and chunks (full-text index) as the Dagster documents asset
        if documents:
            process_documents(driver, batch, docs, database=database, content=content, chunking=chunking, embedder=embedder)

    read_at = time.time()  # the keepsakes' arrival (keepsake_order), as an upload's arrival in raw/ is the pipeline's
    try:
        with meter:
            summary = load_conversations(
                driver, read_inputs(inputs, report, meter), database=database, batch_messages=batch_messages, deep=deep,
                on_batch=load_batch_documents,
            )
            kept_rows = keepsake_rows(report.kept)
            kept = load_keepsakes(driver, kept_rows, links, database, arrived_at=read_at)
            if documents:  # (after the keepsakes: a Document follows the state its keepsake shows)
                process_documents(driver, (), docs, database=database, content=content, chunking=chunking, embedder=embedder,
                                  keepsakes=keepsake_documents(kept_rows))
    except (Neo4jError, DriverError, OSError) as exc:
        click.echo(f"error: writing the graph at {conf['uri']} failed: {type(exc).__name__}: {one_line(str(exc))}", err=True)
        sys.exit(USAGE_OR_GRAPH)
    finally:
        driver.close()
    report_errors(report.errors, quiet)
    out: dict[str, object] = {
        "files": report.files,
        "conversations_read": report.conversations,
        **summary.to_dict(),
        "documents_written": docs.documents_in_graph,
        "chunks_written": docs.chunks_in_graph.chunks,
        "documents_failed": docs.documents_failed + docs.chunks_in_graph.failed,  # refused by the server, even alone
        "deep": deep,
        "errors": len(report.errors),
    }
    if kept:
        out["kept"] = kept
    if report.skipped:
        out["inputs_skipped"] = dict(report.skipped)
    click.echo(json.dumps(out, sort_keys=True))
    sys.exit(INPUT_ERRORS if report.errors else OK)
