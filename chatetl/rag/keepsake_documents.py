"""Documents for what people keep beside their chats: a project's documents, memories, canvases.

One Document a keepsake, searched like a conversation's (chunked and embedded by chatetl.rag.partition):
`kind` says what it is (`project_doc`, `memory`, `canvas`), `name` is what a hit shows instead of a
conversation's title, and its text starts with a label naming it. It follows the state its keepsake
node shows (`owner_key`, `state_hash`: chatetl.graph.keepsakes), so the newest state wins and a
changed text replaces its chunks; a keepsake with blank text keeps an empty Document, so a text
emptied since takes its chunks away.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from chatetl.graph.keepsakes import keepsake_digests, upload_keepsake_tables
from chatetl.rag.documents import TEMPLATE_ID, Document, Span
from chatetl.readers.platform_names import platform_label
from chatetl.readers.timeutil import iso
from chatetl.storage import ObjectStore

PROJECT_DOC, MEMORY, CANVAS = "project_doc", "memory", "canvas"
ARRIVED_VIA = "keepsake"  # a Document's `arrived_via`: no conversation's source, the keepsake tables


def keepsake_documents(tables: Mapping[str, list[dict[str, Any]]]) -> list[Document]:
    """The Documents of one upload's keepsake rows (table -> rows, chatetl.tables.keepsakes): its projects'
    documents, its memories and its canvases, in the tables' order."""
    digests = keepsake_digests(tables)
    projects = {p["project_key"]: p for p in tables.get("projects", [])}
    docs = []
    for d in tables.get("project_docs", []):
        project = projects.get(d["project_key"])
        if project is None:  # (a doc row without its project's: the graph holds no node it could hang from)
            continue
        name = project.get("name") or project["project_id"]
        filename = d.get("filename") or d["doc_id"]
        docs.append(_document(
            PROJECT_DOC, f"{d['project_key']}:{d['doc_id']}", ("Project", d["project_key"]), digests,
            platform=project["platform"], label=f"{filename} (project {name})", text=d["content"],
            title=f"{platform_label(project['platform'])} project {name}: {filename}",
            when=d.get("created_at") or project.get("updated_at"),
            extra={"name": f"{name} / {filename}", "project": name, "project_key": d["project_key"], "filename": filename}))
    for m in tables.get("memories", []):
        project = projects.get(m["project_key"] or "")
        name = (project.get("name") if project else None) or (m["project_key"] or "").split(":", 1)[-1] or None
        what = (f"memory of project {name}" if m["scope"] == "project" else f"memory file {m['path']}" if m.get("path")
                else "account memory")
        docs.append(_document(
            MEMORY, m["memory_key"], ("Memory", m["memory_key"]), digests, platform=m["platform"], label=what[0].upper() + what[1:],
            text=m["text"], title=f"{platform_label(m['platform'])} {what}", when=None,
            extra={"name": what[0].upper() + what[1:], "scope": m["scope"], "project": name, "project_key": m["project_key"], "path": m.get("path")}))
    for c in tables.get("canvases", []):
        docs.append(_document(
            CANVAS, c["canvas_key"], ("Canvas", c["canvas_key"]), digests, platform=c["platform"], label=f"Canvas {c['title']}",
            text=c.get("text"), title=f"{platform_label(c['platform'])} canvas: {c['title']}", when=c.get("created_at"),
            extra={"name": f"Canvas: {c['title']}", "canvas_title": c["title"], "canvas_conversation_key": c.get("conversation_key")}))
    return docs


def upload_keepsake_documents(store: ObjectStore, day: str, uid: str) -> list[Document]:
    """The Documents of the keepsake tables one upload has on a day (none: an upload that keeps nothing)."""
    tables = upload_keepsake_tables(store, day, uid)
    return keepsake_documents(tables) if tables else []


def _document(kind: str, keepsake_key: str, owner: tuple[str, str], digests: Mapping[tuple[str, str], str], *, platform: str,
              label: str, text: str | None, title: str, when: datetime | None, extra: dict[str, Any]) -> Document:
    """One keepsake's Document: its text after `label: ` (none when the text is blank), with what it is."""
    spans: list[Span] = []
    content = ""
    if text and text.strip():
        head = f"{' '.join(label.split())}: "
        content = head + text
        spans = [Span(0, len(content), None, len(head), None, iso(when) if when else None)]
    props = {
        "key": f"{kind}:{keepsake_key}",
        "kind": kind,
        "title": title,
        "content": content,
        "template_id": TEMPLATE_ID,
        "template_name": f"{platform_label(platform)} {kind.replace('_', ' ')}",
        "conversation_id": "",  # (no conversation: the chunks' field stays a string)
        "source": platform,
        "arrived_via": ARRIVED_VIA,
        "created_at": iso(when) if when else None,
        "updated_at": iso(when) if when else None,
        "content_length": len(content),
        "content_sha256": hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest(),
        "state_version": 0.0,
        "state_hash": digests[owner],  # the owner's state this text comes from
        "owner_key": owner[1],
        "keepsake_key": keepsake_key,
        **extra,
    }
    return Document(props, spans)
