"""The RAG stage's retractions (chatetl.retractions): rag/ files rewritten where a retracted conversation's state lived.

The deleted or replaced upload's rag/ files went with its tables (chatetl.ingest.partition), and its
Documents and Chunks with its Conversations (chatetl.graph.retract, the graph stage of the same run).
What is left: the partitions still holding a retracted conversation left it out of their rag/
files while another state won (chatetl.rag.partition); their files are written again, now that their
state is the Conversation's (`write_day_files`), then the graph from them (`load_day_files`, which
marks the records applied: a run stopped between the two does both again).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chatetl.rag.graph_load import load_partition_documents
from chatetl.rag.partition import DocumentsResult, write_partition_documents
from chatetl.rag.vectors import RunVectors
from chatetl.retractions import (
    Retraction,
    holder_days,
    holders,
    mark_applied,
    pending,
    retracted_keys,
)
from chatetl.storage import ObjectStore

if TYPE_CHECKING:
    from neo4j import Driver


def days_to_document(store: ObjectStore, day: str) -> tuple[list[Retraction], list[str]]:
    """The day's retraction records the documents stage has not applied, and the days whose rag/ files a run of
    `day` writes: the day, then those that still hold a conversation the records took out."""
    records = pending(store, day, "documents")
    keys = retracted_keys(records)
    redo = holder_days(holders(store, keys)) - {day} if keys else set()
    return records, [day, *sorted(redo)]


def write_day_files(store: ObjectStore, driver: Driver | None, day: str, **options: Any) -> DocumentsResult:
    """The rag/ files of the partition and of the days `days_to_document` names (`write_partition_documents`,
    same `options`); the graph, with a driver, is only read (which states it holds, the vectors it has)."""
    _, days = days_to_document(store, day)
    result = DocumentsResult()
    with tempfile.TemporaryDirectory(prefix="chatetl-run-vectors-") as tmp, RunVectors(tmp) as seen:
        for one in days:
            result.add(write_partition_documents(store, driver, one, **options, write_graph=False, seen=seen))
    return result


def load_day_files(store: ObjectStore, driver: Driver, day: str, database: str | None = None,
                   progress: Callable[[str], None] | None = None) -> DocumentsResult:
    """The graph's Documents and Chunks from the rag/ files of the days `days_to_document` names; the day's
    records marked applied by the documents stage. `progress`: one line per upload loaded."""
    records, days = days_to_document(store, day)
    result = DocumentsResult()
    for one in days:
        result.add(load_partition_documents(store, driver, one, database=database, progress=progress))
    mark_applied(store, records, "documents")
    return result
