"""What every asset shares: retry policy, metadata helpers."""


from typing import Any

from dagster import Backoff, Jitter, MetadataValue, RetryPolicy

# Steps that talk to S3 or Neo4j retry transient failures with backoff.
NETWORK_RETRY = RetryPolicy(max_retries=3, delay=2, backoff=Backoff.EXPONENTIAL, jitter=Jitter.PLUS_MINUS)
NEO4J_POOL = "neo4j"


def key_list(keys: list[str], limit: int = 50) -> MetadataValue:
    shown = keys[:limit]
    more = f"\n... and {len(keys) - limit} more" if len(keys) > limit else ""
    return MetadataValue.md("\n".join(f"- `{k}`" for k in shown) + more if shown else "_none_")


def counts_table(counts: dict[str, Any]) -> MetadataValue:
    if not counts:
        return MetadataValue.md("_none_")
    rows = "\n".join(f"| `{k}` | {v} |" for k, v in sorted(counts.items()))
    return MetadataValue.md("| what | count |\n| --- | --- |\n" + rows)
