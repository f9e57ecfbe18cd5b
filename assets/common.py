"""What every asset shares: retry policy, the Neo4j pool, partition ranges, metadata helpers."""


from typing import Any, Iterable, Mapping

from dagster import Backoff, Jitter, MetadataValue, RetryPolicy

# Steps that talk to S3 or Neo4j retry transient failures with backoff (2 s, 4 s, 8 s, jittered).
# Data problems raise dagster.Failure(allow_retries=False): retrying cannot fix them.
NETWORK_RETRY = RetryPolicy(max_retries=3, delay=2, backoff=Backoff.EXPONENTIAL, jitter=Jitter.PLUS_MINUS)

# The pool of the steps that write to Neo4j (graph, documents). Its limit comes from the
# instance: `concurrency: pools: default_limit` in dagster.yaml (deploy/dagster.yaml sets 1),
# or `dagster instance concurrency set neo4j 2`.
NEO4J_POOL = "neo4j"

# Tag a run (or a backfill, from the launch dialog) with this to normalize every upload
# again even when its ledger says it is unchanged.
REPROCESS_TAG = "chatetl/reprocess"


def partition_days(context: Any) -> list[str]:
    """The days a run covers: one partition, or a range (backfills of range-aware assets)."""
    return list(context.partition_keys)


def wants_reprocess(context: Any) -> bool:
    return str(context.run.tags.get(REPROCESS_TAG, "")).lower() in ("1", "true", "yes")


def md_text(value: Any) -> str:
    """Text from an upload (a key, a title, an error) made inert in Markdown metadata: HTML,
    table pipes, code-span backticks and link brackets escaped, one line."""
    text = "" if value is None else str(value)
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("\\", "\\\\"), ("|", "\\|"), ("`", "\\`"),
                 ("[", "\\["), ("]", "\\]"), ("\r", " "), ("\n", " ")):
        text = text.replace(a, b)
    return text


def md_cell(value: Any, limit: int = 120) -> str:
    """A value safe inside a Markdown table cell, cut to `limit` characters."""
    text = "" if value is None else str(value)
    return md_text(text[:limit] + ("…" if len(text) > limit else ""))


def md_fenced(text: str, limit: int = 1500) -> str:
    """Text from an upload shown verbatim (never rendered) in Markdown metadata: cut to
    `limit` characters, in a code fence longer than any run of backticks inside it."""
    body = text[:limit] + ("\n…" if len(text) > limit else "")
    longest = run = 0
    for ch in body:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}text\n{body}\n{ticks}"


def md_list(items: list[Any], limit: int = 100) -> MetadataValue:
    shown = items[:limit]
    more = f"\n- ... and {len(items) - limit} more" if len(items) > limit else ""
    return MetadataValue.md("\n".join(f"- {md_text(i)}" for i in shown) + more if shown else "_none_")


def key_list(keys: list[str], limit: int = 50) -> MetadataValue:
    return md_list(keys, limit)


def md_table(headers: Iterable[str], rows: Iterable[Iterable[Any]]) -> MetadataValue:
    headers = list(headers)
    body = [" | ".join(md_cell(v) for v in row) for row in rows]
    if not body:
        return MetadataValue.md("_none_")
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)] + [f"| {row} |" for row in body]
    return MetadataValue.md("\n".join(lines))


def counts_table(counts: Mapping[str, Any], what: str = "what") -> MetadataValue:
    return md_table([what, "count"], ((f"{k}", v) for k, v in sorted(counts.items())))
