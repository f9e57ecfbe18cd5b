"""Node properties from the canonical model: one set of names for every source, plus what says how a state arrived.

Conversation and Document `source` is the platform (`chatgpt`, `claude-ai`, `grok`,
`claude-code` ...), so `WHERE c.source = 'claude-ai'` finds every Claude chat however it
arrived; the format a state arrived through (account export, chat-export
file, REX record ...) is recorded beside it (`sources`, `state_source`). Where a text is cut
(Message `content` at 2,000 characters) the node says so: `content_truncated` and
`content_length`; the full text stays in the normalized tables and the Document.
"""

from __future__ import annotations

import itertools
from typing import Any

from chatetl.labels import chat_title
from chatetl.model import (
    SOURCE_FIDELITY,
    Conversation,
    Message,
    state_hash,
    state_version,
)
from chatetl.readers.timeutil import iso

CONTENT_LIMIT = 2000  # Message.content is cut at 2,000 characters

# The end of an upsert of Document nodes (`d`, its properties `row`): set only where one changed, so a rerun's
# `written` counts nothing; a property set to null is removed.
SET_CHANGED_DOCUMENTS = """WITH d, row
WHERE any(k IN keys(row) WHERE coalesce(d[k] <> row[k], (d[k] IS NULL) <> (row[k] IS NULL)))
SET d += row
RETURN count(d) AS written
"""


def cut(text: str | None, limit: int) -> tuple[str, bool, int]:
    """(text cut to `limit` characters, whether it was cut, its full length)."""
    text = text or ""
    return text[:limit], len(text) > limit, len(text)


def message_key(conv: Conversation, message_id: str) -> str:
    """A message's graph key: the conversation's key (platform and id) and the message's own id."""
    return f"{conv.key}:{message_id}"


def message_name(conv: Conversation, m: Message) -> str:
    """A Message's `name`: `msg-` and the first 12 characters of its id. Ids a reader derived from the conversation id
    (`{conversation_id}:{n}`, files without message ids) would all share their first 12
    characters, so those are named `msg-{conversation_id[:12]}-{n}`: distinct within the chat."""
    return _names(conv, [m.message_id])[0]


def _names(conv: Conversation, ids: list[str]) -> list[str]:
    """`message_name` of each of these message ids of `conv`."""
    prefix = f"{conv.conversation_id}:"
    short, cut_at = f"msg-{conv.conversation_id[:12]}-", len(prefix)
    return [short + i[cut_at:] if i.startswith(prefix) else "msg-" + i[:12] for i in ids]


def conversation_props(conv: Conversation) -> dict[str, Any]:
    """Properties of the state that won; `sources`/`source_files` are kept by the load itself."""
    return {
        "key": conv.key,
        "name": chat_title(conv.title),  # `Untitled` when it has none, as every page, file and Document says
        "title": conv.title,
        "conversation_id": conv.conversation_id,
        "source": conv.platform,  # `source` is the platform (see above); `sources` holds the formats
        "platform": conv.platform,
        "created_at": iso(conv.created_at),
        "updated_at": iso(conv.updated_at),
        "message_count": conv.message_count,
        "total_messages": len(conv.messages),
        "model_slug": conv.model,
        "url": conv.url,
        "timezone": conv.timezone,
    }


MESSAGE_PROPERTIES = (
    "key", "message_id", "name", "role", "kind", "content", "content_truncated", "content_length", "created_at",
    "conversation_id", "platform", "has_tool_calls", "has_tool_results", "model_slug", "seq", "on_active_branch",
    "attachment_names", "attachment_files", "attachments_missing",
)
"""A Message node's properties, in the order message_columns gives them: docs/graph.md's, plus the
`message_id` and `platform` queries find a message by. The links a state asks for (its NEXT and
parent) are not stored on the node: the load passes them beside it. Neo4j's write cost grows
with properties per node, so bookkeeping nothing in the graph reads stays in the normalized
`messages` table (MOVED_OFF_MESSAGE)."""

MOVED_OFF_MESSAGE = ("next_key", "parent_key", "conversation_key", "author_name", "branch_index", "visible")
"""Properties a Message node once had and no longer has, and where they are now: `next_key` /
`parent_key` are the NEXT / REPLIES_TO relationships; `conversation_key` is the HAS_MESSAGE
Conversation's `key` (and the Message `key` up to its last `:`); `visible` is `kind = 'turn'`;
`author_name` and `branch_index` are columns of the normalized `messages` table."""


def message_values(conv: Conversation, m: Message) -> tuple[Any, ...]:
    """A Message node's property values, in MESSAGE_PROPERTIES order (None: not set)."""
    return tuple(column[0] for column in message_columns(conv, [m]))


def message_columns(conv: Conversation, messages: list[Message]) -> list[list[Any]]:
    """The Message node property values of these messages of `conv`, one list per property in MESSAGE_PROPERTIES order
    (None: not set): a column at a time, as the load sends them (cheaper than a tuple per message appended to the
    columns: bench/RESULTS.md)."""
    n = len(messages)
    dicts = [m.__dict__ for m in messages]
    ids = [d["message_id"] for d in dicts]
    texts = [d["text"] or "" for d in dicts]
    lengths = list(map(len, texts))
    key = f"{conv.key}:"  # (message_key, inline on this hot path)
    return [
        [key + i for i in ids],
        ids,
        _names(conv, ids),
        [d["role"].value for d in dicts],
        [d["kind"].value for d in dicts],
        [t[:CONTENT_LIMIT] if n_ > CONTENT_LIMIT else t for t, n_ in zip(texts, lengths)],
        [n_ > CONTENT_LIMIT for n_ in lengths],
        lengths,
        [None if d["created_at"] is None else iso(d["created_at"]) for d in dicts],
        [conv.conversation_id] * n,
        [conv.platform] * n,
        [bool(d["tool_calls"]) for d in dicts],
        [bool(d["tool_results"]) for d in dicts],
        [d["model"] for d in dicts],
        [d["seq"] for d in dicts],
        [d["on_active_branch"] for d in dicts],
        *_attachment_columns(dicts),
    ]


def _attachment_columns(dicts: list[dict[str, Any]]) -> tuple[list[Any], list[Any], list[Any]]:
    """`attachment_names` (each attachment's name, its kind where it has none), `attachment_files` (the sha256 of
    those whose bytes are stored: chatetl.layout.attachment_key) and `attachments_missing` (how many the export
    did not contain); None on a message without attachments."""
    names: list[Any] = []
    files: list[Any] = []
    missing: list[Any] = []
    for d in dicts:
        atts = d["attachments"]
        if not atts:
            names.append(None)
            files.append(None)
            missing.append(None)
            continue
        names.append([a.name or a.kind for a in atts])
        hashes = [a.content_hash for a in atts if a.content_hash]
        files.append(hashes or None)
        missing.append(len(atts) - len(hashes))
    return names, files, missing


def message_props(conv: Conversation, m: Message) -> dict[str, Any]:
    return dict(zip(MESSAGE_PROPERTIES, message_values(conv, m)))


def message_links(conv: Conversation) -> dict[str, tuple[str | None, str | None]]:
    """message id -> (the next visible turn's id, the parent's id): the NEXT / REPLIES_TO a state asks for."""
    nexts = next_ids(conv)
    return {m.message_id: (nexts.get(m.message_id), m.parent_id or None) for m in conv.messages}


def next_ids(conv: Conversation) -> dict[str, str]:
    """message id -> the next visible turn's id, along the active branch (what NEXT links)."""
    turns = sorted((m.seq, n, m.message_id) for n, m in enumerate(conv.messages) if m.seq is not None)  # (n: ties in order)
    return {a[2]: b[2] for a, b in itertools.pairwise(turns)}


def conversation_graph_row(conv: Conversation, deep: bool, props: bool = True) -> dict[str, Any]:
    """What the conversation upsert needs: the state's properties (`props=False`: left out, for the load to add to
    the rows it writes: an unchanged rerun needs none) and what decides whether it wins."""
    row = {
        "key": conv.key,
        "state_version": state_version(conv),
        "state_hash": state_hash(conv),
        "state_rank": SOURCE_FIDELITY.get(conv.source.value, 0),
        "arrived_via": conv.source.value,
        "source_file": conv.source_file,
        "deep": deep,
    }
    if props:
        row["props"] = conversation_props(conv)
    return row
