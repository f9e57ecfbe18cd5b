"""Markdown for note apps (Obsidian, Logseq, Joplin ...): YAML front matter, a title, then the turns.

    ---
    title: Planning a rail trip
    platform: chatgpt
    model: gpt-4o
    created: '2026-01-01T00:00:07Z'
    updated: '2026-01-01T00:00:35Z'
    source: chatgpt
    url: https://chatgpt.com/c/...
    conversation_id: ...
    messages: 4
    tags: [chat, chatgpt]
    ---

    # Planning a rail trip

    ## User

    Which is faster ...

The front matter is written by PyYAML's safe_dump, so any title is quoted as it must be.
Each turn is a `##` heading and its body, verbatim; a body's own headings stay as they are.
"""

from __future__ import annotations

from typing import Any

import yaml

from chatetl.exports.attachments import with_attachments
from chatetl.exports.inert import inert_if_linked, inert_line
from chatetl.exports.markdown import link_text, link_url
from chatetl.exports.meta import ExportView, safe_link, source_list, without_controls
from chatetl.exports.yaml_export import _Dumper, _FastDumper, _needs_python_emitter
from chatetl.labels import chat_title, turn_label
from chatetl.readers.timeutil import iso


def front_matter(view: ExportView) -> dict[str, Any]:
    c = view.conv
    items: dict[str, Any] = {
        "title": chat_title(view.title),
        "platform": c.platform,
        "model": c.model,
        "created": iso(c.created_at),
        "updated": iso(c.updated_at),
        "source": c.source.value,
        "url": c.url,
        "conversation_id": view.chat_id,
        "messages": sum(1 for t in view.turns if t.visible),
        "tags": ["chat", c.platform],
    }
    return {k: v for k, v in items.items() if v is not None and v != ""}


def to_markdown_note(view: ExportView) -> str:
    front = front_matter(view)
    dumper = _Dumper if _needs_python_emitter(front) else _FastDumper  # (LibYAML's emitter: the same text, see yaml_export)
    meta = yaml.dump(front, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=None, width=1_000_000)
    title = inert_line(" ".join(without_controls(front["title"]).split()))  # (a heading: nothing reads it back)
    out = ["---", meta.rstrip("\n"), "---", "", f"# {title}", ""]
    for t in view.turns:
        out += [f"## {inert_if_linked(without_controls(turn_label(t)))}", "", without_controls(with_attachments(view.shown(t), view.attachments(t))).rstrip("\n"), ""]
        links = source_list(t.citations)
        if links:
            out += ["Sources:", ""]
            for i, s in enumerate(links, 1):
                url = safe_link(s.get("url"))  # javascript:, data: ... are never links
                label = s.get("title") or s.get("url") or ""
                out.append(f"{i}. [{link_text(label)}]({link_url(url)})" if url else f"{i}. {link_text(label)}")
            out.append("")
    return "\n".join(out)
