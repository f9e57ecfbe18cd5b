"""The loader as it was before issue 11 (batched UNWIND of 22-key maps, links by key lookups),
frozen here as the reference the new path is compared with (tests/graph/test_load_equivalence.py).
Message nodes also carry `next_key` / `parent_key` here; the new path keeps them off the node."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from chatetl.graph.connection import write_session
from chatetl.graph.properties import (
    CONTENT_LIMIT,
    conversation_graph_row,
    cut,
    message_key,
    message_name,
    next_ids,
)
from chatetl.graph.schema import ensure_schema
from chatetl.graph.traces import trace_for
from chatetl.model import (
    SOURCE_FIDELITY,
    Conversation,
    Message,
    MessageKind,
    state_batches,
)
from chatetl.readers.timeutil import iso
from chatetl.tally import Tally

DEFAULT_BATCH_MESSAGES = 5000


@dataclass
class LoadSummary(Tally):
    conversations_created: int = 0
    conversations_updated: int = 0
    conversations_unchanged: int = 0
    conversations_skipped: int = 0  # an older state (or a poorer one of the same time): recorded as a source only
    messages_written: int = 0
    messages_removed: int = 0
    traces_written: int = 0
    trace_steps_written: int = 0
    traces_removed: int = 0

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


_UPSERT_CONVERSATIONS = """
UNWIND $rows AS row
MERGE (c:Conversation {key: row.key})
SET c._lock = true
WITH c, row, c.state_version AS old_version, c.state_hash AS old_hash,
     coalesce($fidelity[c.state_source], 0) AS old_rank
WITH c, row,
     CASE
       WHEN old_version IS NULL THEN 'created'
       WHEN row.state_version < old_version THEN 'skipped'
       WHEN row.state_version > old_version THEN 'updated'
       WHEN row.state_hash = old_hash THEN
         CASE WHEN coalesce(c.deep, false) = row.deep THEN 'unchanged' ELSE 'updated' END
       WHEN row.source_file IS NOT NULL AND row.source_file = c.state_file AND row.arrived_via = c.state_source THEN 'updated'
       WHEN row.state_rank > old_rank THEN 'updated'
       WHEN row.state_rank < old_rank THEN 'skipped'
       WHEN row.state_hash > old_hash THEN 'updated'
       ELSE 'skipped'
     END AS outcome
CALL (c, row) {
  UNWIND coalesce(c.sources, []) + [row.arrived_via] AS s
  WITH DISTINCT s ORDER BY s
  RETURN collect(s) AS sources
}
CALL (c, row) {
  UNWIND coalesce(c.source_files, []) + coalesce([row.source_file], []) AS f
  WITH DISTINCT f ORDER BY f
  RETURN collect(f) AS source_files
}
SET c.sources = sources, c.source_files = source_files
FOREACH (_ IN CASE WHEN outcome IN ['created', 'updated'] THEN [1] ELSE [] END |
  SET c += row.props, c.state_version = row.state_version, c.state_hash = row.state_hash,
      c.state_source = row.arrived_via, c.state_file = row.source_file, c.deep = row.deep
)
REMOVE c._lock
WITH c, row, outcome
OPTIONAL MATCH (d:Document {key: row.key})
FOREACH (_ IN CASE WHEN d IS NOT NULL AND outcome = 'created' THEN [1] ELSE [] END | MERGE (c)-[:HAS_DOCUMENT]->(d))
RETURN row.key AS key, outcome
"""

_UPSERT_MESSAGES = """
UNWIND $convs AS conv
MATCH (c:Conversation {key: conv.key})
UNWIND conv.messages AS props
MERGE (m:Message {key: props.key})
SET m = props
MERGE (c)-[:HAS_MESSAGE]->(m)
"""

# a created conversation's messages are new (its node did not exist, and messages are only
# ever written with their conversation, in its transaction): CREATE, no lookups
_CREATE_MESSAGES = """
UNWIND $convs AS conv
MATCH (c:Conversation {key: conv.key})
UNWIND conv.messages AS props
CREATE (c)-[:HAS_MESSAGE]->(m:Message)
SET m = props
"""

_REMOVE_STALE_MESSAGES = """
UNWIND $convs AS conv
MATCH (:Conversation {key: conv.key})-[:HAS_MESSAGE]->(m:Message)
WHERE NOT m.key IN conv.message_keys
DETACH DELETE m
RETURN count(m) AS removed
"""

# links a replaced state no longer asks for (each message stores the NEXT / parent it should have)
_REMOVE_STALE_LINKS = """
UNWIND $keys AS key
MATCH (:Conversation {key: key})-[:HAS_MESSAGE]->(m:Message)-[r:NEXT|REPLIES_TO]->(o:Message)
WHERE (type(r) = 'NEXT' AND o.key <> coalesce(m.next_key, ''))
   OR (type(r) = 'REPLIES_TO' AND o.key <> coalesce(m.parent_key, ''))
DELETE r
"""

_LINK_MESSAGES = """
UNWIND $keys AS key
MATCH (:Conversation {key: key})-[:HAS_MESSAGE]->(m:Message)
CALL (m) {
  MATCH (n:Message {key: m.next_key})
  MERGE (m)-[:NEXT]->(n)
}
CALL (m) {
  MATCH (p:Message {key: m.parent_key})
  MERGE (m)-[:REPLIES_TO]->(p)
}
"""

# a created conversation's messages have no links yet: the same links, CREATEd without lookups
_CREATE_LINKS = _LINK_MESSAGES.replace("MERGE", "CREATE")

_REMOVE_TRACES = """
UNWIND $keys AS key
MATCH (:Conversation {key: key})-[:HAS_TRACE]->(t:DecisionTrace)
CALL (t) {
  MATCH (t)-[:HAS_STEP]->(s:TraceStep)
  DETACH DELETE s
}
DETACH DELETE t
RETURN count(*) AS removed
"""

_WRITE_TRACES = """
UNWIND $traces AS trace
MATCH (c:Conversation {key: trace.conversation_key})
MERGE (t:DecisionTrace {id: trace.id})
SET t = trace.props
MERGE (c)-[:HAS_TRACE]->(t)
WITH t, trace
CALL (t) {
  MATCH (t)-[:HAS_STEP]->(old:TraceStep)
  DETACH DELETE old
}
CALL (t, trace) {
  UNWIND trace.steps AS step
  CREATE (s:TraceStep)
  SET s = step
  CREATE (t)-[:HAS_STEP]->(s)
}
"""

_REMOVE_STEPS = """
UNWIND $keys AS key
MATCH (s:TraceStep {key: key})
DETACH DELETE s
"""

_LINK_TRACE_STEPS = """
UNWIND $ids AS id
MATCH (:DecisionTrace {id: id})-[:HAS_STEP]->(s:TraceStep)
CALL (s) {
  MATCH (n:TraceStep {key: s.trace_id + ':' + toString(s.index + 1)})
  CREATE (s)-[:NEXT]->(n)
}
CALL (s) {
  MATCH (call:TraceStep {key: s.paired_step})
  CREATE (s)-[:RESULT_OF]->(call)
}
CALL (s) {
  MATCH (m:Message {key: s.message_key})
  CREATE (s)-[:FROM_MESSAGE]->(m)
}
"""


def message_props(conv: Conversation, m: Message, next_id: str | None = None) -> dict[str, Any]:
    content, truncated, length = cut(m.text, CONTENT_LIMIT)
    return {
        "key": message_key(conv, m.message_id),
        "message_id": m.message_id,
        "name": message_name(conv, m),
        "role": m.role.value,
        "kind": m.kind.value,
        "content": content,
        "content_truncated": truncated,
        "content_length": length,
        "created_at": iso(m.created_at),
        "conversation_id": conv.conversation_id,
        "conversation_key": conv.key,
        "platform": conv.platform,
        "has_tool_calls": bool(m.tool_calls),
        "has_tool_results": bool(m.tool_results),
        "model_slug": m.model,
        "author_name": m.author_name,
        "seq": m.seq,
        "branch_index": m.branch_index,
        "on_active_branch": m.on_active_branch,
        "visible": m.kind is MessageKind.TURN,
        # the links this state asks for: the load makes NEXT / REPLIES_TO match them
        "parent_key": message_key(conv, m.parent_id) if m.parent_id else None,
        "next_key": message_key(conv, next_id) if next_id else None,
    }



def _message_rows(conv: Conversation) -> list[dict[str, Any]]:
    """The messages' properties without the empty ones (`SET m = props` leaves them unset): less to send."""
    nexts = next_ids(conv)
    return [
        {k: v for k, v in message_props(conv, m, nexts.get(m.message_id)).items() if v is not None}
        for m in conv.messages
    ]


def _write_batch(tx: Any, convs: list[Conversation], deep: bool, safe: bool = False) -> LoadSummary:
    """One batch in one transaction (a pure function of its input: safe to retry).

    Messages of created conversations are CREATEd (no lookups); `safe` writes them like a
    replaced state's (MERGE), for the rare graph where nodes outlived their conversation."""
    summary = LoadSummary()
    rows = sorted((conversation_graph_row(c, deep) for c in convs), key=lambda r: r["key"])  # one lock order: fewer deadlocks
    outcomes = {rec["key"]: rec["outcome"] for rec in tx.run(_UPSERT_CONVERSATIONS, rows=rows, fidelity=SOURCE_FIDELITY)}
    created: list[Conversation] = []
    updated: list[Conversation] = []
    for conv in convs:
        outcome = outcomes.get(conv.key)
        if outcome == "created":
            created.append(conv)
        elif outcome == "updated":
            updated.append(conv)
        elif outcome == "unchanged":
            summary.conversations_unchanged += 1
        else:
            summary.conversations_skipped += 1
    summary.conversations_created, summary.conversations_updated = len(created), len(updated)
    accepted = created + updated
    if not accepted:
        return summary
    fresh, replaced = ([], accepted) if safe else (created, updated)

    for query, group in ((_CREATE_MESSAGES, fresh), (_UPSERT_MESSAGES, replaced)):
        chunk: list[dict[str, Any]] = []
        size = 0
        for conv in group:  # statements of bounded size, whatever the batch holds
            chunk.append({"key": conv.key, "messages": _message_rows(conv)})
            size += len(conv.messages)
            if size >= DEFAULT_BATCH_MESSAGES:
                tx.run(query, convs=chunk).consume()
                chunk, size = [], 0
        if chunk:
            tx.run(query, convs=chunk).consume()
    summary.messages_written = sum(len(c.messages) for c in accepted)

    if replaced:
        keys = [c.key for c in replaced]
        stale = [{"key": c.key, "message_keys": [message_key(c, m.message_id) for m in c.messages]} for c in replaced]
        record = tx.run(_REMOVE_STALE_MESSAGES, convs=stale).single()
        summary.messages_removed = record["removed"] if record else 0
        tx.run(_REMOVE_STALE_LINKS, keys=keys).consume()
        tx.run(_LINK_MESSAGES, keys=keys).consume()
    if fresh:
        tx.run(_CREATE_LINKS, keys=[c.key for c in fresh]).consume()

    traces = [t for t in (trace_for(c) for c in accepted) if t is not None] if deep else []
    traced = {t["conversation_key"] for t in traces}
    untraced = [c.key for c in replaced if c.key not in traced]
    if untraced:
        record = tx.run(_REMOVE_TRACES, keys=untraced).single()
        summary.traces_removed = record["removed"] if record else 0
    if traces:
        if safe:
            tx.run(_REMOVE_STEPS, keys=[s["key"] for t in traces for s in t["steps"]]).consume()
        tx.run(_WRITE_TRACES, traces=traces).consume()
        tx.run(_LINK_TRACE_STEPS, ids=[t["id"] for t in traces]).consume()
        summary.traces_written = len(traces)
        summary.trace_steps_written = sum(len(t["steps"]) for t in traces)
    return summary


def batches(conversations: Iterable[Conversation], max_messages: int = DEFAULT_BATCH_MESSAGES) -> Iterator[list[Conversation]]:
    """Batches bounded by message count (see chatetl.model.state_batches)."""
    return state_batches(conversations, max_messages, weight=lambda conv: len(conv.messages) + 1)


def load_conversations(
    driver: Any,
    conversations: Iterable[Conversation],
    database: str | None = None,
    batch_messages: int = DEFAULT_BATCH_MESSAGES,
    deep: bool = False,
    on_batch: Callable[[list[Conversation]], None] | None = None,
) -> LoadSummary:
    """Write conversations (streamed), one managed transaction per batch; returns what changed.

    `deep` (off unless asked for: the asset and the CLI read `CHATETL_GRAPH_DEEP`) adds the
    DecisionTrace/TraceStep of every conversation with tool use. `on_batch` is
    called with each batch once it is committed (the CLI loads the batch's Documents there).
    """
    ensure_schema(driver, database)
    total = LoadSummary()
    from neo4j.exceptions import ConstraintError

    with write_session(driver, database) as session:
        for batch in batches(conversations, batch_messages):
            try:
                total.add(session.execute_write(_write_batch, batch, deep))
            except ConstraintError:  # a node outlived its conversation (e.g. deleted by hand): write it over
                total.add(session.execute_write(_write_batch, batch, deep, True))
            if on_batch is not None:
                on_batch(batch)
    return total
