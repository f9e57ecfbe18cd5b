"""Document nodes in Neo4j: one per conversation, attached to it (HAS_DOCUMENT), following its winning state."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chatetl.graph.connection import write_session
from chatetl.graph.schema import ensure_schema

# A Document follows its Conversation: it is written when it comes from the state that won
# in the graph (same state hash: two states tied on time and format never both write it, so
# the load order does not matter); without a Conversation, the newest wins.
# `written` counts the Documents whose properties changed.
_UPSERT_DOCUMENTS = """
UNWIND $rows AS row
OPTIONAL MATCH (c:Conversation {key: row.key})
WITH row, c
WHERE c IS NULL OR c.state_version IS NULL
   OR (c.state_version = row.state_version AND c.state_source = row.arrived_via AND c.state_hash = row.state_hash)
MERGE (d:Document {key: row.key})
WITH d, row, c
WHERE c IS NOT NULL OR d.state_version IS NULL OR row.state_version >= d.state_version
FOREACH (_ IN CASE WHEN c IS NULL THEN [] ELSE [1] END | MERGE (c)-[:HAS_DOCUMENT]->(d))
WITH d, row
WHERE any(k IN keys(row) WHERE coalesce(d[k] <> row[k], (d[k] IS NULL) <> (row[k] IS NULL)))
SET d += row
RETURN count(d) AS written
"""


# the Documents whose Conversation holds another state: left out of the rag/ files (model.state_order)
_SUPERSEDED = """
UNWIND $rows AS row
MATCH (c:Conversation {key: row.key})
WHERE c.state_version IS NOT NULL
  AND NOT (c.state_version = row.state_version AND c.state_source = row.arrived_via AND c.state_hash = row.state_hash)
RETURN row.key AS key
"""


def superseded_documents(driver: Any, docs: list[dict[str, Any]], database: str | None = None) -> set[str]:
    """Keys of the Documents (their properties) whose Conversation in the graph holds another state."""
    if not docs:
        return set()
    rows = [{k: d[k] for k in ("key", "state_version", "arrived_via", "state_hash")} for d in docs]
    with write_session(driver, database) as session:
        records = session.execute_read(lambda tx: tx.run(_SUPERSEDED, rows=rows).data())
    return {r["key"] for r in records}


def load_documents(driver: Any, docs: Iterable[dict[str, Any]], database: str | None = None, batch: int = 500) -> int:
    """Upsert Document nodes (the Conversation's winning state, else newest) and attach each to its Conversation."""
    ensure_schema(driver, database)
    written = 0
    rows: list[dict[str, Any]] = []

    def flush() -> int:
        with write_session(driver, database) as session:
            record = session.execute_write(lambda tx: tx.run(_UPSERT_DOCUMENTS, rows=rows).single())
        return record["written"] if record else 0

    for doc in docs:
        rows.append(doc)
        if len(rows) >= batch:
            written += flush()
            rows = []
    if rows:
        written += flush()
    return written
