"""Document nodes in Neo4j: one per conversation, attached to it (HAS_DOCUMENT), following its winning state."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from chatetl.graph.connection import quiet, value_fault, write_measured, write_session
from chatetl.graph.keepsakes import is_keepsake_document, load_keepsake_documents, superseded_keepsake_documents
from chatetl.graph.properties import SET_CHANGED_DOCUMENTS
from chatetl.graph.schema import ensure_schema
from chatetl.model import SOURCE_FIDELITY

if TYPE_CHECKING:
    from neo4j import Driver

# A Document follows its Conversation: it is written when it comes from the state that won
# in the graph (the same state: two states of one time never both write it, so the load order
# does not matter); without a Conversation, the state model.state_order puts first (the same
# state again writes its properties over). `written` counts the Documents whose properties changed.
_UPSERT_DOCUMENTS = """
UNWIND $rows AS row
OPTIONAL MATCH (c:Conversation {key: row.key})
WITH row, c
WHERE c IS NULL OR c.state_version IS NULL
   OR (c.state_version = row.state_version AND c.state_source = row.arrived_via AND c.state_hash = row.state_hash)
MERGE (d:Document {key: row.key})
WITH d, row, c
WHERE c IS NOT NULL OR d.state_version IS NULL
   OR [row.state_version, coalesce($fidelity[row.arrived_via], 0), row.state_hash]
      >= [d.state_version, coalesce($fidelity[d.arrived_via], 0), coalesce(d.state_hash, '')]
FOREACH (_ IN CASE WHEN c IS NULL THEN [] ELSE [1] END | MERGE (c)-[:HAS_DOCUMENT]->(d))
""" + SET_CHANGED_DOCUMENTS


# the Documents whose Conversation holds another state: left out of the rag/ files (model.state_order)
_SUPERSEDED = """
UNWIND $rows AS row
MATCH (c:Conversation {key: row.key})
WHERE c.state_version IS NOT NULL
  AND NOT (c.state_version = row.state_version AND c.state_source = row.arrived_via AND c.state_hash = row.state_hash)
RETURN row.key AS key
"""


def superseded_documents(driver: Driver, docs: list[dict[str, Any]], database: str | None = None) -> set[str]:
    """Keys of the Documents (their properties) whose Conversation in the graph holds another state (a keepsake's:
    whose keepsake shows another state, chatetl.graph.keepsakes.superseded_keepsake_documents)."""
    if not docs:
        return set()
    rows = [{k: d[k] for k in ("key", "state_version", "arrived_via", "state_hash")} for d in docs]
    kept = [r for r in rows if is_keepsake_document(r)]
    with write_session(driver, database) as session:
        records = session.execute_read(lambda tx: tx.run(_SUPERSEDED, quiet({"rows": rows})).data())
    return {r["key"] for r in records} | (superseded_keepsake_documents(driver, kept, database) if kept else set())


def load_documents(driver: Driver, docs: Iterable[dict[str, Any]], database: str | None = None, batch: int = 500,
                   failures: list[tuple[str, BaseException]] | None = None) -> int:
    """Upsert Document nodes (the Conversation's winning state, else newest) and attach each to its Conversation.

    With `failures`, one Document fails alone: a batch the server (or the driver) refuses for what it holds (a
    value, its size: chatetl.graph.connection.value_fault) is written again in halves, each whole or not at all,
    down to that Document, which goes into `failures` (key, error) while the others are written. A keepsake's
    Document (a project's doc, a memory, a canvas) follows its keepsake instead (chatetl.graph.keepsakes)."""
    ensure_schema(driver, database)
    written = 0
    rows: list[dict[str, Any]] = []
    keepsakes: list[dict[str, Any]] = []

    def flush(rows: list[dict[str, Any]]) -> int:
        try:  # (write_measured: a transaction too big for the server fails at once, not after 30 s of retries)
            with write_session(driver, database) as session:
                record, _ = write_measured(session, lambda tx: tx.run(_UPSERT_DOCUMENTS, quiet({"rows": rows, "fidelity": SOURCE_FIDELITY})).single())
        except Exception as exc:
            if failures is None or not value_fault(exc):
                raise
            if len(rows) == 1:
                failures.append((rows[0]["key"], exc))
                return 0
            return flush(rows[:len(rows) // 2]) + flush(rows[len(rows) // 2:])
        return record["written"] if record else 0

    for doc in docs:
        (keepsakes if is_keepsake_document(doc) else rows).append(doc)
        if len(rows) >= batch:
            written += flush(rows)
            rows = []
    if rows:
        written += flush(rows)
    if keepsakes:
        written += load_keepsake_documents(driver, keepsakes, database, failures)
    return written
