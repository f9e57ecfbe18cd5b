"""The keepsake tables: what an upload keeps beside its chats (chatetl.keepsakes), one Parquet file each.

`projects` (one row a project), `project_docs` (one row a document of a project, in the project's
order), `memories` (one row a memory text), `canvases` (one row a canvas). An upload's keepsakes are
few beside its chats, so each table is written whole, once, after the conversations are read. A
keepsake read twice in one upload (a project in `projects.json` and in `projects/<uuid>.json`) is
one row: the last read. A table with no row is not written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from chatetl.keepsakes import Canvas, Keepsake, Memory, MemoryScope, Project, project_key
from chatetl.tables.schema import TS

PROJECTS_SCHEMA = pa.schema(
    [
        ("project_key", pa.string()),  # "{platform}:{project_id}"
        ("platform", pa.string()),
        ("project_id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("prompt_template", pa.string()),  # the project's instructions
        ("created_at", TS),
        ("updated_at", TS),
        ("is_private", pa.bool_()),
        ("is_starter", pa.bool_()),  # the platform's own sample project
        ("creator_id", pa.string()),
        ("creator_name", pa.string()),
        ("doc_count", pa.int32()),
        ("source_file", pa.string()),
        ("upload_key", pa.string()),
        ("upload_arrived_at", TS),  # when the upload's version arrived in raw/: the graph's order, rebuilt from here
        ("extra", pa.string()),  # JSON: unknown source fields, kept raw
    ]
)

PROJECT_DOCS_SCHEMA = pa.schema(
    [
        ("project_key", pa.string()),
        ("doc_id", pa.string()),
        ("position", pa.int32()),  # 0-based, in the project's order
        ("filename", pa.string()),
        ("content", pa.string()),
        ("created_at", TS),
        ("upload_key", pa.string()),
        ("upload_arrived_at", TS),  # when the upload's version arrived in raw/: the graph's order, rebuilt from here
    ]
)

MEMORIES_SCHEMA = pa.schema(
    [
        ("memory_key", pa.string()),  # "{platform}:{account_id}:{scope}[:{project_id or path}]"
        ("platform", pa.string()),
        ("account_id", pa.string()),
        ("scope", pa.string()),  # account, project, file
        ("project_key", pa.string()),  # a project memory's project (the export's own link); null otherwise
        ("path", pa.string()),  # a memory file's path
        ("text", pa.string()),
        ("source_file", pa.string()),
        ("upload_key", pa.string()),
        ("upload_arrived_at", TS),  # when the upload's version arrived in raw/: the graph's order, rebuilt from here
    ]
)

CANVASES_SCHEMA = pa.schema(
    [
        ("canvas_key", pa.string()),  # "{platform}:{canvas_id}"
        ("platform", pa.string()),
        ("canvas_id", pa.string()),
        ("title", pa.string()),
        ("created_at", TS),
        ("text", pa.string()),  # the canvas's text where the export holds it
        ("conversation_key", pa.string()),  # the chat it was made in, only where the export links it; null otherwise
        ("source_file", pa.string()),
        ("upload_key", pa.string()),
        ("upload_arrived_at", TS),  # when the upload's version arrived in raw/: the graph's order, rebuilt from here
    ]
)

KEEPSAKE_SCHEMAS: dict[str, pa.Schema] = {
    "projects": PROJECTS_SCHEMA, "project_docs": PROJECT_DOCS_SCHEMA, "memories": MEMORIES_SCHEMA, "canvases": CANVASES_SCHEMA,
}


def keepsake_rows(kept: Iterable[Keepsake], upload_key: str | None = None,
                  arrived_at: datetime | None = None) -> dict[str, list[dict[str, Any]]]:
    """The rows of each keepsake table (every table named, empty where nothing was kept), each with its upload's key
    and arrival (the graph orders two versions of one keepsake by it, from the tables alone)."""
    projects: dict[str, Project] = {}
    memories: dict[str, Memory] = {}
    canvases: dict[str, Canvas] = {}
    for item in kept:
        found: dict[str, Any] = projects if isinstance(item, Project) else memories if isinstance(item, Memory) else canvases
        found.pop(item.key, None)  # (the last read, in its place)
        found[item.key] = item
    rows: dict[str, list[dict[str, Any]]] = {table: [] for table in KEEPSAKE_SCHEMAS}
    for p in projects.values():
        rows["projects"].append({
            "project_key": p.key, "platform": p.platform, "project_id": p.project_id, "name": p.name, "description": p.description,
            "prompt_template": p.prompt_template, "created_at": p.created_at, "updated_at": p.updated_at, "is_private": p.is_private,
            "is_starter": p.is_starter, "creator_id": p.creator_id, "creator_name": p.creator_name, "doc_count": len(p.docs),
            "source_file": p.source_file, "upload_key": upload_key,
            "extra": json.dumps(p.extra, sort_keys=True, ensure_ascii=False) if p.extra else None,
        })
        rows["project_docs"] += [
            {"project_key": p.key, "doc_id": d.doc_id, "position": i, "filename": d.filename, "content": d.content,
             "created_at": d.created_at, "upload_key": upload_key}
            for i, d in enumerate(p.docs)
        ]
    for m in memories.values():
        rows["memories"].append({
            "memory_key": m.key, "platform": m.platform, "account_id": m.account_id, "scope": m.scope,
            "project_key": project_key(m.platform, m.project_id) if m.scope == MemoryScope.PROJECT and m.project_id else None,
            "path": m.path, "text": m.text, "source_file": m.source_file, "upload_key": upload_key,
        })
    for c in canvases.values():
        rows["canvases"].append({
            "canvas_key": c.key, "platform": c.platform, "canvas_id": c.canvas_id, "title": c.title, "created_at": c.created_at,
            "text": c.text, "conversation_key": f"{c.platform}:{c.conversation_id}" if c.conversation_id else None,
            "source_file": c.source_file, "upload_key": upload_key,
        })
    for table_rows in rows.values():
        for row in table_rows:
            row["upload_arrived_at"] = arrived_at
    return rows


def write_keepsakes(kept: Iterable[Keepsake], folder: str | Path, upload_key: str | None = None,
                    arrived_at: datetime | None = None) -> dict[str, Path]:
    """Each keepsake table that has rows as `<folder>/<table>.parquet`: {table: its path}."""
    written = {}
    for table, rows in keepsake_rows(kept, upload_key, arrived_at).items():
        if rows:
            path = Path(folder, f"{table}.parquet")
            pq.write_table(pa.Table.from_pylist(rows, schema=KEEPSAKE_SCHEMAS[table]), path, compression="zstd")
            written[table] = path
    return written


def read_keepsakes(path: str | Path) -> list[dict[str, Any]]:
    """A keepsake table's rows (a small file, read whole)."""
    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows
