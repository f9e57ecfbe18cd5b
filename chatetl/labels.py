"""What a person reads for a chat and a turn: "Untitled", "User", "Assistant (reasoning)" ...

Shared by the Documents (role labels in their text) and the HTML and Markdown-note exports; a
platform's name is `chatetl.readers.platform_names.platform_label`."""

from __future__ import annotations

from chatetl.model import MessageKind, Role
from chatetl.selection import OutputTurn

UNTITLED = "Untitled"

ROLE_LABELS = {Role.USER: "User", Role.ASSISTANT: "Assistant", Role.SYSTEM: "System", Role.TOOL: "Tool"}


def chat_title(title: str | None) -> str:
    """The name a person reads for a chat: its title, or `Untitled` (every page, file and Document says the same)."""
    return title if title and title.strip() else UNTITLED


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
