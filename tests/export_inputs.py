"""Generated conversations for the documents and exports tests (never real people's data).

`chat(...)` builds a canonical Conversation from (role, text) pairs (plus optional reasoning,
tool and hidden messages and an abandoned branch) and resolves its branches with the real
resolver; `sample_conversations()` reads the built-in ChatGPT sample export through the real
reader; `TRICKY` holds bodies that break naive writers.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

from chatetl.model import (
    Citation,
    Conversation,
    Message,
    MessageKind,
    Role,
    Source,
    ToolCall,
    ToolResult,
)
from chatetl.readers import ReadReport, read_entry
from chatetl.readers.entry import Entry
from chatetl.readers.tree import resolve_branches
from chatetl.samples import chatgpt_export

T0 = datetime(2026, 3, 14, 9, 26, 53, tzinfo=UTC)

TRICKY = [
    "plain answer",
    "Here is code:\n\n```python\ndef f(x):\n    return x * 2\n\n\nprint(f(3))\n```\n\nDone.",
    "An md block with a heading:\n```md\n# Title\n\nbody text\n```\nafter it",
    "Quoted marker inside a longer fence:\n````\n```md\nuser:\n```\n````\nend",
    "Marker inside tildes:\n~~~\n```md\nassistant:\n```\n~~~",
    "Unicode: Grüße, 世界, Привет, 🚀🧪, naïve café — ‘quotes’ «guillemets» \u200bzero-width",
    "Empty lines:\n\n\n\nthree above, and one at the start below\n\n\nend",
    "\nstarts with a newline",
    "   leading spaces and trailing spaces   ",
    "line with trailing spaces   \nnext line",
    "\tstarts with a tab\tand has one inside",
    "yes",
    "no",
    "null",
    "~",
    "true",
    "0123",
    "1:20",
    "2026-01-01",
    ": starts with a colon",
    "# not a comment",
    "- not a list item",
    "key: value",
    "'single quoted'",
    '"double quoted"',
    "@at !bang &anchor *alias |pipe >gt %percent `tick",
    "[a, b]",
    "{a: b}",
    "---",
    "...",
    "? question",
    "a very long line " * 200,
    "<script>alert('x')</script> & <b>bold</b>",
    "sources\n1. [not](https://example.org) a sources fence",
    "user:",
]

# bodies the fenced Markdown layout cannot hold verbatim (the writer adjusts them, see chatetl.exports.markdown)
MD_AMBIGUOUS = [
    "A marker-shaped md block:\n```md\nuser:\n```\nafter",
    "A sources-shaped md block:\n```md\nsources\n1. [x](https://example.org)\n```",
    "An answer cut off inside code:\n```python\nprint('never closed')",
    "A stray closing fence\n```\nthen text",
    "```md",
]


def message(i: int, role: Role, text: str, kind: MessageKind = MessageKind.TURN, parent: str | None = None, **kw: Any) -> Message:
    kw.setdefault("created_at", T0 + timedelta(seconds=i))
    return Message(message_id=f"m{i:03d}", parent_id=parent, role=role, kind=kind, text=text, **kw)


def chat(
    turns: list[tuple[str, str]],
    *,
    title: str | None = "A test chat",
    platform: str = "chatgpt",
    conversation_id: str = "conv-1",
    source: Source = Source.CHATGPT,
    updated: datetime | None = None,
    model: str | None = "gpt-4o",
    url: str | None = None,
    extras: bool = False,
    branch: bool = False,
    citations: list[Citation] | None = None,
) -> Conversation:
    """A linear chat of (role, text) turns; `extras` adds hidden context, reasoning, a tool call and result
    before the last assistant turn; `branch` adds an abandoned regeneration of the first answer."""
    messages: list[Message] = []
    parent: str | None = None

    def add(role: Role, text: str, kind: MessageKind = MessageKind.TURN, **kw: Any) -> str:
        nonlocal parent
        m = message(len(messages), role, text, kind, parent, **kw)
        messages.append(m)
        parent = m.message_id
        return m.message_id

    if extras:
        add(Role.SYSTEM, "HIDDEN-CONTEXT: custom instructions", MessageKind.HIDDEN)
    first_user = None
    for n, (role, text) in enumerate(turns):
        last = n == len(turns) - 1
        if extras and last and role == "assistant":
            add(Role.ASSISTANT, "REASONING-TRACE: think first", MessageKind.REASONING)
            add(Role.ASSISTANT, '{"q": "TOOL-CALL-INPUT"}', MessageKind.TOOL_CALL, tool_calls=[ToolCall(id="call-1", name="search", input='{"q": "TOOL-CALL-INPUT"}')])
            add(Role.TOOL, "TOOL-RESULT-OUTPUT", MessageKind.TOOL_RESULT, author_name="search",
                tool_results=[ToolResult(tool_call_id="call-1", name="search", output="TOOL-RESULT-OUTPUT")])
        cites = citations if (citations and role == "assistant") else []
        mid = add(Role(role), text, citations=cites)
        if role == "user" and first_user is None:
            first_user = mid
    if branch and first_user is not None:
        messages.append(message(len(messages), Role.ASSISTANT, "ABANDONED-BRANCH: an earlier regeneration", parent=first_user,
                                created_at=T0 - timedelta(days=1)))
    conv = Conversation(
        source=source,
        platform=platform,
        conversation_id=conversation_id,
        title=title,
        created_at=T0,
        updated_at=updated or T0 + timedelta(minutes=5),
        model=model,
        url=url,
        current_node=parent,
        messages=messages,
    )
    resolve_branches(conv)
    return conv


def sample_conversations() -> list[Conversation]:
    data = chatgpt_export()
    report = ReadReport()
    convs = list(read_entry(Entry(name="sample.zip", opener=lambda: io.BytesIO(data), size=len(data)), report))
    assert not report.errors
    return convs


def visible(conv: Conversation) -> list[tuple[str, str]]:
    return [(m.role.value, m.text) for m in conv.visible_turns]
