"""Which platform a chat happened on, and its own id, from what a file says (a name, a URL); and
the one name a person reads for each platform.

Shared by every reader whose files name the platform in their own words (the chat-export
files, ShareGPT datasets and REX records), and by every output that shows a platform: the
data keeps the key (`chatgpt`, `unknown`), pages, files, Documents and search show its
`platform_label` (`ChatGPT`, `Unknown`), so a source reads the same everywhere."""

from __future__ import annotations

import re
import uuid
from itertools import pairwise
from typing import Any
from urllib.parse import parse_qs, urlsplit

PLATFORM_ALIASES = {
    "claude": "claude-ai",
    "claude.ai": "claude-ai",
    "claude_ai": "claude-ai",
    "claudeai": "claude-ai",
    "anthropic": "claude-ai",
    "openai": "chatgpt",
    "chat.openai.com": "chatgpt",
    "chatgpt.com": "chatgpt",
    "chat-gpt": "chatgpt",
    "bard": "gemini",
    "google-gemini": "gemini",
    "gemini.google.com": "gemini",
    "grok.com": "grok",
    "x.ai": "grok",
    "xai": "grok",
    "perplexity.ai": "perplexity",
    "www.perplexity.ai": "perplexity",
    "deepseek.com": "deepseek",
    "chat.deepseek.com": "deepseek",
    "copilot.microsoft.com": "copilot",
    "microsoft-copilot": "copilot",
    "chat.mistral.ai": "mistral",
    "le-chat": "mistral",
    "lechat": "mistral",
}


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
    "unknown": "Unknown",  # (a ShareGPT dataset, a file that does not say)
}


def platform_label(platform: str) -> str:
    """"ChatGPT", "Claude AI", ... as a person reads it; a platform without a label in title case."""
    if platform in PLATFORM_LABELS:
        return PLATFORM_LABELS[platform]
    words = [w for w in platform.replace("_", "-").split("-") if w]
    return " ".join(w[:1].upper() + w[1:] for w in words) or PLATFORM_LABELS["unknown"]


# host (or host suffix) -> platform, for files that carry a URL but no platform
_HOST_PLATFORMS = (
    ("chatgpt.com", "chatgpt"),
    ("chat.openai.com", "chatgpt"),
    ("claude.ai", "claude-ai"),
    ("grok.com", "grok"),
    ("x.com", "grok"),
    ("gemini.google.com", "gemini"),
    ("bard.google.com", "gemini"),
    ("perplexity.ai", "perplexity"),
    ("deepseek.com", "deepseek"),
    ("copilot.microsoft.com", "copilot"),
    ("mistral.ai", "mistral"),
)


# path segments after which a chat URL carries the chat's own id (chatgpt.com/c/<id>, claude.ai/chat/<uuid>,
# gemini.google.com/app/<id>, grok.com/chat/<id>, perplexity.ai/search/<slug>, chat.deepseek.com/a/chat/s/<id>)
_ID_MARKERS = frozenset({"c", "chat", "app", "s", "search", "conversation", "conversations", "thread", "threads"})


_ID_QUERY_KEYS = ("conversation", "conversation_id", "chat_id", "chat")


_ID_SHAPE = re.compile(r"^[A-Za-z0-9][\w.\-]{3,}$")


def normalize_platform(value: Any, url: Any = None) -> str:
    """The service a chat happened on, lowercase and normalized ("claude" -> "claude-ai"); "unknown" if unsaid."""
    if isinstance(value, str) and value.strip():
        name = value.strip().lower()
        if "://" in name:
            return platform_from_url(name) or "unknown"
        name = PLATFORM_ALIASES.get(name, name)
        name = re.sub(r"\s+", "-", name)
        return PLATFORM_ALIASES.get(name, name)
    return platform_from_url(url) or "unknown"


def platform_from_url(url: Any) -> str | None:
    if not isinstance(url, str) or not url.strip():
        return None
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return None
    for suffix, platform in _HOST_PLATFORMS:
        if host == suffix or host.endswith("." + suffix):
            return platform
    return None


def id_from_url(url: Any) -> str | None:
    """The chat's own id from its URL (chatgpt.com/c/<id>, claude.ai/chat/<uuid>, ...), or None."""
    if not isinstance(url, str) or not url.strip():
        return None
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    found = None
    segments = [s for s in parts.path.split("/") if s]
    for before, seg in pairwise(segments):
        if before.lower() in _ID_MARKERS and _ID_SHAPE.match(seg):
            found = seg
    if found:
        return found
    query = parse_qs(parts.query)
    for key in _ID_QUERY_KEYS:
        for value in query.get(key, []):
            if _ID_SHAPE.match(value):
                return value
    return None


def derived_id(*parts: Any) -> str:
    """A deterministic conversation id from stable content, for sources that carry none."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "chatetl:" + "\n".join("" if p is None else str(p) for p in parts)))
