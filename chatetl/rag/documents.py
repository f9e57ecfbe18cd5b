"""Documents for RAG: one per conversation, the full visible text of the active branch.

The text is what a person saw: visible turns only, each `Label: text` (`User: ...`,
`Assistant: ...`: the role labels of chatetl.labels), turns separated by a blank line, never
truncated; an attachment's text follows its turn as `Label attachment <name>: text`.
Reasoning, tool internals, hidden context and abandoned branches stay out
unless `ContentOptions` lets them in; an abandoned branch then follows the active one
under an `[Other branch N]` line, with only the turns it does not share.

`document_for` builds a Document node's properties (`title` `{Platform}: {title}`, `content`,
`template_id` `chat-import`, `template_name` `{Platform} Conversation`, `source` the platform,
the conversation's id, times and turn count, and the state the text comes from);
`build_document` also keeps where
each message's text sits in `content` (character spans), which the chunker needs to say
which messages a chunk comes from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chatetl.labels import chat_title, turn_label
from chatetl.model import Conversation, state_hash, state_version
from chatetl.readers.platform_names import platform_label
from chatetl.readers.timeutil import iso
from chatetl.selection import VISIBLE, ContentOptions, branches

TEMPLATE_ID = "chat-import"
TURN_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Span:
    """Where one turn (or a branch heading, message_id None) sits in a document's content: [start, end),
    and who said it when (the message's role and time; None for a heading)."""

    start: int
    end: int
    message_id: str | None
    label_end: int  # end of the `Label: ` prefix
    role: str | None = None
    at: str | None = None  # the message's time, ISO (None: the export gives none)


@dataclass
class Document:
    props: dict[str, Any]
    spans: list[Span] = field(default_factory=list)

    @property
    def key(self) -> str:
        key: str = self.props["key"]
        return key

    @property
    def content(self) -> str:
        content: str = self.props["content"]
        return content


def _content(conv: Conversation, options: ContentOptions) -> tuple[str, list[Span]]:
    parts: list[str] = []
    spans: list[Span] = []
    pos = 0

    def add(text: str, message_id: str | None, label_len: int, role: str | None = None) -> None:
        nonlocal pos
        if parts:
            parts.append(TURN_SEPARATOR)
            pos += len(TURN_SEPARATOR)
        parts.append(text)
        spans.append(Span(pos, pos + len(text), message_id, pos + label_len, role, times.get(message_id) if message_id else None))
        pos += len(text)

    texts = _attachment_texts(conv)
    times = {m.message_id: iso(m.created_at) for m in conv.messages if m.created_at is not None}
    for branch in branches(conv, options):
        if branch.index:
            add(f"[Other branch {branch.index}]", None, 0)
        for turn in branch.own_turns:
            if turn.text.strip():  # (an empty turn adds nothing to search)
                label = f"{turn_label(turn)}: "
                add(label + turn.text, turn.message_id, len(label), turn.role.value)
            for name, text in texts.get(turn.message_id, ()) if turn.visible else ():
                label = f"{turn_label(turn)} attachment {name}: "
                add(label + text, turn.message_id, len(label), turn.role.value)
    return "".join(parts), spans


def _attachment_texts(conv: Conversation) -> dict[str, list[tuple[str, str]]]:
    """The text of each message's attachments (extracted by the platform, or read from a text file it held),
    by message id: part of the Document after the turn's own text, marked as the attachment's."""
    out: dict[str, list[tuple[str, str]]] = {}
    for m in conv.messages:
        for att in m.attachments:
            if att.text and att.text.strip() and att.kind != "image":  # (an image's text is the prompt that drew it)
                name = " ".join((att.name or "file").split())
                out.setdefault(m.message_id, []).append((name, att.text.strip()))
    return out


def build_document(conv: Conversation, options: ContentOptions = VISIBLE) -> Document:
    """The Document's properties (with the key tying it to its Conversation) and the turns' spans."""
    label = platform_label(conv.platform)
    title = chat_title(conv.title)
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
    """The Document's properties, with the key that ties it to its Conversation."""
    return build_document(conv, options).props


def document_text(conv: Conversation, options: ContentOptions = VISIBLE) -> str:
    return _content(conv, options)[0]


def documents_jsonl(docs: Iterable[dict[str, Any]]) -> Iterable[bytes]:
    for doc in docs:
        yield (json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8", "replace")


