"""What the graph holds now, whatever run wrote it: its nodes counted by label, read from the
database's count store (constant time, however large the graph)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatetl.graph.connection import run_read

if TYPE_CHECKING:
    from neo4j import Driver

# one label a subquery: a bare `count(n)` of one label is answered from the count store
_TOTALS = """
CALL () { MATCH (n:Conversation) RETURN count(n) AS conversations }
CALL () { MATCH (n:Message) RETURN count(n) AS messages }
CALL () { MATCH (n:Document) RETURN count(n) AS documents }
CALL () { MATCH (n:Chunk) RETURN count(n) AS chunks }
RETURN conversations, messages, documents, chunks
"""


def graph_totals(driver: Driver, database: str | None = None) -> dict[str, int]:
    """The graph's conversations, messages, documents and chunks now."""
    rows = run_read(driver, database, _TOTALS)
    return {name: int(value) for name, value in rows[0].items()} if rows else {}
