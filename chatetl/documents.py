"""Documents for RAG: one per conversation, the full visible text of the active branch.

The text is what a person saw: visible turns only, each `Label: text` (role labels
as the seed's Document `content` has them), turns separated by a blank line, never
truncated. Reasoning, tool internals, hidden context and abandoned branches stay out
unless `ContentOptions` lets them in; an abandoned branch then follows the active one
under an `[Other branch N]` line, with only the turns it does not share.

`document_for` builds the seed's Document properties; `build_document` also keeps where
each message's text sits in `content` (character spans), which the chunker needs to say
which messages a chunk comes from.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from chatetl.graph.properties import state_hash
from chatetl.model import Conversation, MessageKind, Role
from chatetl.normalize import state_version
from chatetl.readers.timeutil import iso
from chatetl.selection import VISIBLE, ContentOptions, OutputTurn, branches

TEMPLATE_ID = "chat-import"
PLATFORM_LABELS = {
    "chatgpt": "ChatGPT",
    "claude-ai": "Claude AI",
    "claude-code": "Claude Code",
    "grok": "Grok",
    "gemini": "Gemini",
    "perplexity": "Perplexity",
    "deepseek": "DeepSeek",
    "copilot": "Copilot",
    "mistral": "Mistral",
    "meta-ai": "Meta AI",
    "poe": "Poe",
    "qwen": "Qwen",
    "kimi": "Kimi",
    "pi": "Pi",
    "character-ai": "Character.AI",
    "huggingchat": "HuggingChat",
    "you": "You.com",
    "rex": "REX",
    "unknown": "Chat",
}
ROLE_LABELS = {Role.USER: "User", Role.ASSISTANT: "Assistant", Role.SYSTEM: "System", Role.TOOL: "Tool"}
TURN_SEPARATOR = "\n\n"


def platform_label(platform: str) -> str:
    """"ChatGPT", "Claude AI", ... for the Document title; unknown platforms in title case."""
    if platform in PLATFORM_LABELS:
        return PLATFORM_LABELS[platform]
    words = [w for w in platform.replace("_", "-").split("-") if w]
    return " ".join(w[:1].upper() + w[1:] for w in words) or "Chat"


def turn_label(turn: OutputTurn) -> str:
    """The label a turn's text gets in a Document: `User`, `Assistant`, `Assistant (reasoning)`, `Tool (python)` ..."""
    if turn.kind is MessageKind.TURN:
        return ROLE_LABELS[turn.role]
    if turn.kind is MessageKind.REASONING:
        return "Assistant (reasoning)"
    if turn.kind is MessageKind.TOOL_CALL:
        return f"Assistant (tool call: {turn.name})" if turn.name else "Assistant (tool call)"
    if turn.kind is MessageKind.TOOL_RESULT:
        return f"Tool ({turn.name})" if turn.name else "Tool"
    if turn.kind is MessageKind.SUMMARY:
        return "Summary"
    return "System (hidden)"


@dataclass(frozen=True)
class Span:
    """Where one turn (or a branch heading, message_id None) sits in a document's content: [start, end)."""

    start: int
    end: int
    message_id: str | None
    label_end: int  # end of the `Label: ` prefix


@dataclass
class Document:
    props: dict[str, Any]
    spans: list[Span] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.props["key"]

    @property
    def content(self) -> str:
        return self.props["content"]


def _content(conv: Conversation, options: ContentOptions) -> tuple[str, list[Span]]:
    parts: list[str] = []
    spans: list[Span] = []
    pos = 0

    def add(text: str, message_id: str | None, label_len: int) -> None:
        nonlocal pos
        if parts:
            parts.append(TURN_SEPARATOR)
            pos += len(TURN_SEPARATOR)
        parts.append(text)
        spans.append(Span(pos, pos + len(text), message_id, pos + label_len))
        pos += len(text)

    for branch in branches(conv, options):
        if branch.index:
            add(f"[Other branch {branch.index}]", None, 0)
        for turn in branch.own_turns:
            if not turn.text.strip():
                continue  # an empty turn adds nothing to search
            label = f"{turn_label(turn)}: "
            add(label + turn.text, turn.message_id, len(label))
    return "".join(parts), spans


def build_document(conv: Conversation, options: ContentOptions = VISIBLE) -> Document:
    """The seed's Document properties (plus the key tying it to its Conversation) and the turns' spans."""
    label = platform_label(conv.platform)
    title = conv.title or f"conv-{conv.conversation_id}"
    content, spans = _content(conv, options)
    props = {
        "key": conv.key,
        "title": f"{label}: {title}",
        "content": content,
        "template_id": TEMPLATE_ID,
        "template_name": f"{label} Conversation",
        "conversation_id": conv.conversation_id,
        "source": conv.platform,
        "arrived_via": conv.source.value,
        "created_at": iso(conv.created_at),
        "updated_at": iso(conv.updated_at),
        "message_count": conv.message_count,
        "content_length": len(content),
        "content_sha256": hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest(),
        "state_version": state_version(conv),
        "state_hash": state_hash(conv),  # the Conversation's state this text comes from
    }
    return Document(props, spans)


def document_for(conv: Conversation, options: ContentOptions = VISIBLE) -> dict[str, Any]:
    """The seed's Document properties, plus the key that ties it to its Conversation."""
    return build_document(conv, options).props


def document_text(conv: Conversation, options: ContentOptions = VISIBLE) -> str:
    return _content(conv, options)[0]


def documents_jsonl(docs: Iterable[dict[str, Any]]) -> Iterable[bytes]:
    for doc in docs:
        yield (json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8", "replace")


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


def load_documents(driver: Any, docs: Iterable[dict[str, Any]], database: str | None = None, batch: int = 500) -> int:
    """Upsert Document nodes (the Conversation's winning state, else newest) and attach each to its Conversation."""
    from chatetl.graph.connection import write_session
    from chatetl.graph.schema import ensure_schema

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
