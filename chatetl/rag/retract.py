"""The RAG stage's retractions (chatetl.retractions): rag/ files rewritten where a retracted conversation's state lived.

The deleted or replaced upload's rag/ files went with its tables (chatetl.ingest.partition), and its
Documents and Chunks with its Conversations (chatetl.graph.retract, the graph stage of the same run).
What is left: the partitions still holding a retracted conversation left it out of their rag/
files while another state won (chatetl.rag.partition); they are written again, now that their state
is the Conversation's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chatetl.rag.partition import DocumentsResult, write_partition_documents
from chatetl.retractions import (
    holder_days,
    holders,
    mark_applied,
    pending,
    retracted_keys,
)
from chatetl.storage import ObjectStore

if TYPE_CHECKING:
    from neo4j import Driver


def write_day_documents(store: ObjectStore, driver: Driver | None, day: str, **options: Any) -> DocumentsResult:
    """The partition's Documents (`write_partition_documents`, same `options`), then those of the partitions
    that still hold a conversation the day's retractions took out."""
    records = pending(store, day, "documents")
    keys = retracted_keys(records)
    redo = holder_days(holders(store, keys)) - {day} if keys else set()
    result = write_partition_documents(store, driver, day, **options)
    for other in sorted(redo):
        result.add(write_partition_documents(store, driver, other, **options))
    mark_applied(store, records, "documents")
    return result
