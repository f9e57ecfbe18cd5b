"""HTML: a standalone, print-friendly page; everything from a chat is escaped.

A link back to the archive page (`../archive/index.html`, where the `archive` export puts it
beside `html/`), then `<article>` with a `<header>` (the title and a `<dl>` of meta), then one
`<section data-role="...">` per turn: an `<h2>` role heading, the message's time (UTC), the body
rendered from Markdown, and an optional Sources `<ol>`.

Escaping: the page is a Jinja2 template with autoescape on, so titles, meta and source
titles are escaped; bodies go through markdown-it-py with `html=False`, so raw HTML in a
message (`<script>`, `<img onerror=...>`) is shown as text, and markdown-it's link check
drops `javascript:`, `vbscript:`, `file:` and `data:` links. Attachments are shown by relative links
to the export's own `files/` folder (chatetl.exports.attachments), images as `<img>`. Links in the meta and sources are kept only for http(s) and mailto (`meta.safe_link`); raw control characters (NUL, ESC ...) are taken out. Images are not fetched: Markdown images render as links,
and a Content-Security-Policy forbids scripts and remote loads even if something slipped through.
"""

from __future__ import annotations

from datetime import UTC
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markdown_it import MarkdownIt
from markupsafe import Markup

from chatetl.exports.attachments import href, is_image, missing_note, shown_name
from chatetl.exports.meta import ExportView, safe_link, source_list, without_controls
from chatetl.labels import chat_title, turn_label
from chatetl.model import Attachment
from chatetl.readers.platform_names import platform_label
from chatetl.readers.timeutil import iso

TEMPLATES = Path(__file__).resolve().parent / "templates"


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=StrictUndefined, keep_trailing_newline=True)


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")  # no remote loads: ![alt](url) shows as text and a link
    return md


safe_href = safe_link  # (the name the template code uses)


def render_body(text: str) -> Markup:
    """A Markdown body as HTML; raw HTML in it is escaped (markdown-it, html=False)."""
    return Markup(_markdown().render(text))


def _meta(view: ExportView) -> list[dict[str, Any]]:
    c = view.conv
    items = [
        ("Platform", platform_label(c.platform), None),
        ("Model", c.model, None),
        ("Created", view.meta().get("created_at"), None),
        ("Updated", view.meta().get("updated_at"), None),
        ("Messages", str(sum(1 for t in view.turns if t.visible)), None),
        ("URL", c.url, safe_href(c.url)),
        ("Conversation id", view.chat_id, None),
        ("Source", c.source.value, None),
    ]
    return [{"label": k, "value": v, "href": h} for k, v, h in items if v]


def _times(view: ExportView) -> dict[str, tuple[str, str]]:
    """Each message's time: (ISO 8601 for `<time datetime>`, what a person reads: `2026-03-14 09:26 UTC`)."""
    out = {}
    for m in view.conv.messages:
        if m.created_at is not None:
            when = m.created_at.astimezone(UTC)
            out[m.message_id] = (iso(when) or "", when.strftime("%Y-%m-%d %H:%M UTC"))
    return out


def _attachment(att: Attachment) -> dict[str, Any]:
    """An attachment as the page shows it: an image, a link to the file, or what stands in for a missing one."""
    return {"name": shown_name(att), "href": href(att), "image": is_image(att), "missing": missing_note(att),
            "text": without_controls(att.text) if att.text and att.content_hash is None else None}


def to_html(view: ExportView) -> str:
    title = chat_title(view.title)
    times = _times(view)
    messages = []
    shown: list[dict[str, Any]] = []
    for t in view.turns:
        attachments = [_attachment(a) for a in view.attachments(t)]
        shown += attachments
        sources = [{"title": s.get("title") or s.get("url"), "href": safe_href(s.get("url"))} for s in source_list(t.citations)]
        messages.append(
            {
                "role": t.role.value,
                "kind": t.kind.value,
                "heading": turn_label(t),
                "body": render_body(view.shown(t)),
                "sources": sources,
                "time": times.get(t.message_id),
                "attachments": attachments,
            }
        )
    files = any(a["href"] for a in shown)  # (then the page may load its own files: CSP; a page without
    # attachments is as it was: no style, no CSP for them)
    page = _environment().get_template("conversation.html.j2").render(
        title=title, meta=_meta(view), messages=messages, shown=bool(shown), files=files)
    return without_controls(page)  # (everything in it is escaped text: taking controls out cannot make markup)
