"""The chat-export Markdown layout (seed 002): a `sys` fence, one `md` fence per turn, sources."""

from __future__ import annotations

from chatetl.model import Conversation
from chatetl.readers.timeutil import iso


def _meta_value(value: str) -> str:
    return " ".join(value.split())  # one line: a title with newlines must not break the fence


def to_markdown(conv: Conversation) -> str:
    meta = [
        ("platform", conv.platform),
        ("url", conv.url),
        ("title", conv.title),
        ("exported", iso(conv.updated_at or conv.created_at)),
        ("chat_id", conv.conversation_id),
        ("model", conv.model),
    ]
    out = ["```md", "sys"]
    out += [f"{k}: {_meta_value(v)}" for k, v in meta if v]
    out += ["```", ""]
    for m in conv.visible_turns:
        out += ["```md", f"{m.role.value}:", "```", "", m.text.rstrip("\n"), ""]
        links = [c for c in m.citations if c.url]
        if links:
            out += ["```md", "sources"]
            out += [f"{i}. [{_meta_value(c.title or c.url or '')}]({c.url})" for i, c in enumerate(links, 1)]
            out += ["```", ""]
    return "\n".join(out)
