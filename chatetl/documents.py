"""Documents for RAG: one per conversation, the full visible text of the active branch.

The text is what a person saw: visible turns only, with role labels, never
truncated. Reasoning, tool internals, hidden context and abandoned branches stay out.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from chatetl.model import Conversation, Role
from chatetl.normalize import state_version
from chatetl.readers.timeutil import iso

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
}
ROLE_LABELS = {Role.USER: "User", Role.ASSISTANT: "Assistant", Role.SYSTEM: "System", Role.TOOL: "Tool"}


def platform_label(platform: str) -> str:
    return PLATFORM_LABELS.get(platform) or platform.replace("-", " ").title() or "Chat"


def document_text(conv: Conversation) -> str:
    return "\n\n".join(f"{ROLE_LABELS[m.role]}: {m.text}" for m in conv.visible_turns)


def document_for(conv: Conversation) -> dict[str, Any]:
    """The seed's Document properties, plus the key that ties it to its Conversation."""
    label = platform_label(conv.platform)
    title = conv.title or f"conv-{conv.conversation_id}"
    return {
        "key": conv.key,
        "title": f"{label}: {title}",
        "content": document_text(conv),
        "template_id": TEMPLATE_ID,
        "template_name": f"{label} Conversation",
        "conversation_id": conv.conversation_id,
        "source": conv.platform,
        "arrived_via": conv.source.value,
        "created_at": iso(conv.created_at),
        "updated_at": iso(conv.updated_at),
        "message_count": conv.message_count,
        "state_version": state_version(conv),
    }


def documents_jsonl(docs: Iterable[dict[str, Any]]) -> Iterable[bytes]:
    for doc in docs:
        yield (json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n").encode()


_UPSERT_DOCUMENTS = """
UNWIND $rows AS row
MERGE (d:Document {key: row.key})
WITH d, row
WHERE d.state_version IS NULL OR row.state_version >= d.state_version
SET d += row
WITH d, row
OPTIONAL MATCH (c:Conversation {key: row.key})
FOREACH (_ IN CASE WHEN c IS NULL THEN [] ELSE [1] END | MERGE (c)-[:HAS_DOCUMENT]->(d))
RETURN count(d) AS written
"""


def load_documents(driver: Any, docs: Iterable[dict[str, Any]], database: str | None = None, batch: int = 500) -> int:
    """Upsert Document nodes (newest state wins) and attach each to its Conversation."""
    from chatetl.graph.schema import ensure_schema

    ensure_schema(driver, database)
    written = 0
    rows: list[dict[str, Any]] = []

    def flush() -> int:
        records, _, _ = driver.execute_query(_UPSERT_DOCUMENTS, rows=rows, database_=database)
        return records[0]["written"] if records else 0

    for doc in docs:
        rows.append(doc)
        if len(rows) >= batch:
            written += flush()
            rows = []
    if rows:
        written += flush()
    return written
