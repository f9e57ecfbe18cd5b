"""`chatetl search QUERY`: hybrid search over every loaded chunk (chatetl.search), ranked by conversation.

    chatetl search "QUERY" [--platform P] [--since D] [--until D] [--role R] [--model M] [-k N]
                           [--mode hybrid|text|vector] [--min-score S] [--verbose] [--json]

In a terminal: a ranked list, each hit with its conversation (title, platform label, date), its score,
the part of the chunk that matches (the query's words in bold; a hit found by meaning alone shows
its nearest sentence, unmarked) and a link to the conversation's exported file (a local path, or
a presigned URL for S3); its message and chunk ids with --verbose. With --json: one JSON object
per hit and line (the `chatetl.search.Hit` fields), nothing else on stdout.
"""

from __future__ import annotations

import sys
from datetime import date, datetime
from typing import Any

import click

from chatetl.cli.options import OK, USAGE_OR_GRAPH, with_examples
from chatetl.cli.terminal import json_line, one_line, printable
from chatetl.readers.platform_names import platform_label
from chatetl.settings import Settings

EXIT_CODES = """\b
Exit codes:
  0  the search ran (with hits or none: "no hits" goes to stderr)
  2  a usage error (an unknown option, a bad value or setting), or the
     graph could not be searched (Neo4j unreachable or refusing)"""


def settings_store(settings: Settings) -> Any | None:
    """The configured bucket (CHATETL_STORE ...), to say where exported files are; None if there is none here."""
    from chatetl.storage import LocalObjectStore, S3ObjectStore, s3_client

    if settings.store == "s3" and settings.s3_bucket:
        return S3ObjectStore(s3_client(settings.s3_endpoint_url, settings.aws_region), settings.s3_bucket, settings.s3_prefix)
    if settings.store == "local" and settings.local_store_root:
        return LocalObjectStore(settings.local_store_root)
    return None


def _date(value: str | None, name: str) -> date | None:
    if not value:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d").date()
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected a date, YYYY-MM-DD", param_hint=name) from None


def _marked(text: str, spans: list[tuple[int, int]], color: bool) -> str:
    """The text with its matches in bold (or between ** ** without colour), on one line; every piece
    of the chat's text made printable (a sequence a match cuts in two is text, never a control)."""
    out: list[str] = []
    pos = 0
    for start, end in spans:
        if start < pos:
            continue
        out.append(printable(text[pos:start]))
        word = printable(text[start:end])
        out.append(click.style(word, bold=True) if color else f"**{word}**")
        pos = end
    out.append(printable(text[pos:]))
    return " ".join("".join(out).split())


def render(hit: Any, color: bool, verbose: bool = False) -> str:
    """A hit for a person: the head (rank, title, platform, day, which lists found it, the score; a keepsake's
    name, project and file, and what it is, instead of a conversation's title), the
    snippet (the query's words marked, only where they are), the file to open; the ids with `verbose`."""
    from chatetl.search import KEPT

    conv = hit.conversation
    day = one_line(str(conv.get("updated_at") or conv.get("created_at") or "")[:10]) or "undated"
    found = ", ".join(f"{name} #{rank}" for name, rank in (("text", hit.text_rank), ("vector", hit.vector_rank)) if rank)
    title = one_line(conv.get("title") or conv.get("document_title") or conv["key"])
    where = one_line(platform_label(str(conv.get("platform") or "unknown")))
    if hit.kind in KEPT:  # a project's document, a memory, a canvas: no conversation
        where = f"{where} {KEPT[hit.kind]}"
    head = (f"{hit.rank:>2}. {click.style(title, bold=True) if color else title}  ·  {where}  ·  {day}"
            f"  ({found})  score {hit.score:.2f}")
    snippet, spans = hit.snippet()
    lines = [head, f"    {_marked(snippet, spans if hit.matched == 'words' else [], color)}"]
    if verbose:
        ids = [one_line(i) for i in hit.message_ids]
        lines.append(f"    messages: {', '.join(ids)}   chunk {one_line(hit.chunk_id)}")
    links = hit.links or hit.exports
    if links:
        fmt = "html" if "html" in links else min(links)
        lines.append(f"    file: {one_line(links[fmt][0])}")
    return "\n".join(lines)


@click.command(
    "search",
    short_help="Search the chats `load` put into Neo4j: a ranked list of conversations.",
    epilog=with_examples(
        "chatetl search \"averaging three numbers\"",
        "chatetl search \"when did I plan the trip\" --platform chatgpt --since 2026-01-01", codes=EXIT_CODES,
    ),
)
@click.argument("query")
@click.option("--platform", default=None, help="Only this platform (chatgpt, claude-ai, grok ...; claude means claude-ai)")
@click.option("--since", default=None, metavar="YYYY-MM-DD", help="Conversations active on or after this day")
@click.option("--until", default=None, metavar="YYYY-MM-DD", help="Conversations started on or before this day")
@click.option("--role", type=click.Choice(["user", "assistant", "system", "tool"]), default=None, help="Chunks holding a message of this role")
@click.option("--model", default=None, help="Conversations or messages of this model (a prefix, any case: gpt-4, claude-3)")
@click.option("-k", "k", type=click.IntRange(min=1, max=1000), default=10, show_default=True, help="Hits to show")
@click.option("--mode", type=click.Choice(["hybrid", "text", "vector"]), default="hybrid", show_default=True,
              help="Full-text and vector search fused (hybrid), or one of them")
@click.option("--min-score", type=float, default=None, metavar="S",
              help="Leave out hits scoring below S (hybrid: 0-1; text: the words' BM25; vector: the cosine's (1 + cos) / 2)")
@click.option("-v", "--verbose", is_flag=True, default=False, help="Show each hit's message and chunk ids")
@click.option("--json", "as_json", is_flag=True, default=False, help="One JSON object per hit and line")
def search(query: str, platform: str | None, since: str | None, until: str | None, role: str | None, model: str | None,
           k: int, mode: str, min_score: float | None, verbose: bool, as_json: bool) -> None:
    """Search everything loaded into Neo4j (NEO4J_URI ...; `chatetl load` or the pipeline) for QUERY:
    the words (full-text index) and what they mean (vector index, the model of CHATETL_EMBEDDER,
    else the built-in one), blended by score, the words first where they are all found."""
    from chatetl.graph.connection import neo4j_settings, open_driver
    from chatetl.graph.failures import graph_failure, reachable
    from chatetl.rag.embeddings import load_embedder
    from chatetl.search import EmbedderMismatch, SearchError, SearchFilters
    from chatetl.search import search as run_search

    try:
        settings = Settings.from_env()
        conf = neo4j_settings(settings)
        filters = SearchFilters(platform=platform, since=_date(since, "--since"), until=_date(until, "--until"), role=role, model=model)
        embedder = load_embedder(settings=settings) if mode != "text" else None
    except ValueError as exc:  # a SettingError, a SearchError, a bad CHATETL_EMBEDDER
        raise click.UsageError(one_line(str(exc))) from exc
    if embedder is None and mode == "hybrid":
        click.echo("note: embeddings are off (CHATETL_EMBEDDINGS): full-text search only", err=True)
    store = settings_store(settings)
    driver = open_driver(settings=settings)
    try:
        reachable(driver)  # one attempt: a server that is down or refuses fails now, not after the driver's retries
        hits = run_search(driver, query, k=k, mode=mode, filters=filters, embedder=embedder, store=store, database=conf["database"] or None)
    except EmbedderMismatch as exc:  # a setting to fix, said as a graph that cannot be read is
        click.echo(f"error: {one_line(str(exc))}", err=True)
        sys.exit(USAGE_OR_GRAPH)
    except SearchError as exc:
        raise click.UsageError(one_line(str(exc))) from exc
    except Exception as exc:
        failure = graph_failure(exc, settings)
        if failure is None:
            raise
        click.echo(f"error: {one_line(failure)}", err=True)
        sys.exit(USAGE_OR_GRAPH)
    finally:
        driver.close()
    if min_score is not None:
        hits = [hit for hit in hits if hit.score >= min_score]
    if as_json:
        for hit in hits:
            click.echo(json_line(hit.to_dict()))
    else:
        color = sys.stdout.isatty()
        click.echo("\n\n".join(render(hit, color, verbose) for hit in hits) if hits else "", nl=bool(hits))
    if not hits:
        click.echo(f"no hits for {one_line(repr(query))}", err=True)
    sys.exit(OK)
