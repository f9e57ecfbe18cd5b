"""Load conversations into Neo4j: batched UNWIND writes, newest state wins, reruns change nothing.

Each batch of conversations is written in one managed transaction (retried on
transient errors), so an interrupted load leaves whole conversations and a rerun
converges to the same graph. Per conversation:
- its state version (the source's own update time) is compared with the stored one;
  an older state only records that it was seen from that source, it never regresses;
- a newer or equal state replaces: messages upserted, messages no longer present
  deleted, NEXT rebuilt along the active branch's visible turns, REPLIES_TO along
  parent pointers (so every branch stays reachable).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from chatetl.model import Conversation, Message, MessageKind
from chatetl.graph.schema import ensure_schema
from chatetl.normalize import state_version
from chatetl.readers.timeutil import iso

CONTENT_LIMIT = 2000  # the seed cuts Message.content at 2,000 characters


@dataclass
class LoadSummary:
    conversations_created: int = 0
    conversations_updated: int = 0
    conversations_unchanged: int = 0
    conversations_skipped_older: int = 0
    messages_written: int = 0
    messages_removed: int = 0

    def add(self, other: "LoadSummary") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def message_key(conv: Conversation, message_id: str) -> str:
    return f"{conv.key}:{message_id}"


def conversation_props(conv: Conversation) -> dict[str, Any]:
    title = conv.title or ""
    return {
        "name": title if title else f"conv-{conv.conversation_id}",
        "title": conv.title,
        "conversation_id": conv.conversation_id,
        "source": conv.platform,  # the seed's `source` is the platform
        "created_at": iso(conv.created_at),
        "updated_at": iso(conv.updated_at),
        "message_count": conv.message_count,
        "total_messages": len(conv.messages),
        "model_slug": conv.model,
        "url": conv.url,
        "timezone": conv.timezone,
    }


def message_props(conv: Conversation, m: Message) -> dict[str, Any]:
    content = m.text or ""
    return {
        "key": message_key(conv, m.message_id),
        "message_id": m.message_id,
        "name": f"msg-{m.message_id[:12]}",
        "role": m.role.value,
        "kind": m.kind.value,
        "content": content[:CONTENT_LIMIT],
        "content_truncated": len(content) > CONTENT_LIMIT,
        "content_length": len(content),
        "created_at": iso(m.created_at),
        "conversation_id": conv.conversation_id,
        "platform": conv.platform,
        "has_tool_calls": bool(m.tool_calls),
        "has_tool_results": bool(m.tool_results),
        "model_slug": m.model,
        "seq": m.seq,
        "branch_index": m.branch_index,
        "on_active_branch": m.on_active_branch,
        "visible": m.kind is MessageKind.TURN,
        "parent_key": message_key(conv, m.parent_id) if m.parent_id else None,
    }


_UPSERT_CONVERSATIONS = """
UNWIND $rows AS row
MERGE (c:Conversation {key: row.key})
WITH c, row, c.state_version AS old_version, c.state_hash AS old_hash
WITH c, row, old_version, old_hash,
     CASE WHEN old_version IS NULL THEN 'created'
          WHEN row.state_version < old_version THEN 'older'
          WHEN row.state_version = old_version AND row.state_hash = old_hash THEN 'unchanged'
          ELSE 'updated' END AS outcome
SET c.sources = CASE WHEN row.arrived_via IN coalesce(c.sources, []) THEN c.sources
                     ELSE coalesce(c.sources, []) + row.arrived_via END,
    c.source_files = CASE WHEN row.source_file IS NULL OR row.source_file IN coalesce(c.source_files, []) THEN c.source_files
                          ELSE coalesce(c.source_files, []) + row.source_file END
FOREACH (_ IN CASE WHEN outcome IN ['created', 'updated'] THEN [1] ELSE [] END |
    SET c += row.props, c.state_version = row.state_version, c.state_hash = row.state_hash,
        c.state_source = row.arrived_via
)
RETURN row.key AS key, outcome
"""

_UPSERT_MESSAGES = """
UNWIND $rows AS row
MATCH (c:Conversation {key: row.conversation_key})
MERGE (m:Message {key: row.key})
SET m += row.props
MERGE (c)-[:HAS_MESSAGE]->(m)
"""

_REMOVE_STALE = """
UNWIND $rows AS row
MATCH (c:Conversation {key: row.key})-[:HAS_MESSAGE]->(m:Message)
WHERE NOT m.key IN row.message_keys
DETACH DELETE m
RETURN count(m) AS removed
"""

_REBUILD_LINKS = """
UNWIND $rows AS row
MATCH (c:Conversation {key: row.key})-[:HAS_MESSAGE]->(m:Message)
OPTIONAL MATCH (m)-[r:NEXT|REPLIES_TO]->()
DELETE r
WITH DISTINCT row
CALL (row) {
  UNWIND row.next AS pair
  MATCH (a:Message {key: pair[0]}), (b:Message {key: pair[1]})
  MERGE (a)-[:NEXT]->(b)
}
CALL (row) {
  UNWIND row.parents AS pair
  MATCH (child:Message {key: pair[0]}), (parent:Message {key: pair[1]})
  MERGE (child)-[:REPLIES_TO]->(parent)
}
RETURN count(row) AS n
"""


def _state_hash(conv: Conversation) -> str:
    import hashlib

    h = hashlib.sha256()
    h.update(conv.model_dump_json(exclude={"source_file"}).encode())
    return h.hexdigest()[:32]


def _conversation_row(conv: Conversation) -> dict[str, Any]:
    return {
        "key": conv.key,
        "props": conversation_props(conv),
        "state_version": state_version(conv),
        "state_hash": _state_hash(conv),
        "arrived_via": conv.source.value,
        "source_file": conv.source_file,
    }


def _links(conv: Conversation) -> dict[str, Any]:
    turns = sorted((m for m in conv.messages if m.seq is not None), key=lambda m: m.seq)  # type: ignore[arg-type, return-value]
    return {
        "key": conv.key,
        "message_keys": [message_key(conv, m.message_id) for m in conv.messages],
        "next": [[message_key(conv, a.message_id), message_key(conv, b.message_id)] for a, b in zip(turns, turns[1:])],
        "parents": [[message_key(conv, m.message_id), message_key(conv, m.parent_id)] for m in conv.messages if m.parent_id],
    }


def _write_batch(tx: Any, convs: list[Conversation]) -> LoadSummary:
    summary = LoadSummary()
    rows = [_conversation_row(c) for c in convs]
    outcomes = {rec["key"]: rec["outcome"] for rec in tx.run(_UPSERT_CONVERSATIONS, rows=rows)}
    accepted = []
    for conv in convs:
        outcome = outcomes.get(conv.key)
        if outcome == "created":
            summary.conversations_created += 1
            accepted.append(conv)
        elif outcome == "updated":
            summary.conversations_updated += 1
            accepted.append(conv)
        elif outcome == "unchanged":
            summary.conversations_unchanged += 1
        else:
            summary.conversations_skipped_older += 1
    if not accepted:
        return summary
    msg_rows = [
        {"conversation_key": c.key, "key": message_key(c, m.message_id), "props": message_props(c, m)}
        for c in accepted
        for m in c.messages
    ]
    for i in range(0, len(msg_rows), 5000):
        tx.run(_UPSERT_MESSAGES, rows=msg_rows[i : i + 5000]).consume()
    links = [_links(c) for c in accepted]
    removed = tx.run(_REMOVE_STALE, rows=links).single()
    summary.messages_removed += removed["removed"] if removed else 0
    tx.run(_REBUILD_LINKS, rows=links).consume()
    summary.messages_written += len(msg_rows)
    return summary


def _batches(conversations: Iterable[Conversation], max_messages: int) -> Iterator[list[Conversation]]:
    """Batches bounded by message count; two states of one conversation never share a batch
    (the second is written after the first, and the state-version rule decides)."""
    batch: list[Conversation] = []
    keys: set[str] = set()
    size = 0
    for conv in conversations:
        if conv.key in keys:
            yield batch
            batch, keys, size = [], set(), 0
        batch.append(conv)
        keys.add(conv.key)
        size += len(conv.messages) + 1
        if size >= max_messages:
            yield batch
            batch, keys, size = [], set(), 0
    if batch:
        yield batch


def load_conversations(driver: Any, conversations: Iterable[Conversation], database: str | None = None, batch_messages: int = 5000) -> LoadSummary:
    """Write conversations, one managed transaction per batch; returns what changed."""
    ensure_schema(driver, database)
    total = LoadSummary()
    with driver.session(database=database) as session:
        for batch in _batches(conversations, batch_messages):
            total.add(session.execute_write(_write_batch, batch))
    return total
