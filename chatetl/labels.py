"""What a person reads for a platform and a turn: "ChatGPT", "User", "Assistant (reasoning)" ...

Shared by the Documents (role labels in their text) and the HTML and Markdown-note exports."""

from __future__ import annotations

from chatetl.model import MessageKind, Role
from chatetl.selection import OutputTurn

PLATFORM_LABELS = {
    "chatgpt": "ChatGPT",
    "claude-ai": "Claude AI",
    "claude-code": "Claude Code",
    "codex-cli": "Codex CLI",
    "gemini-cli": "Gemini CLI",
    "opencode": "opencode",
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
    "open-webui": "Open WebUI",
    "ai-studio": "Google AI Studio",
    "unknown": "Chat",
}


ROLE_LABELS = {Role.USER: "User", Role.ASSISTANT: "Assistant", Role.SYSTEM: "System", Role.TOOL: "Tool"}


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
