"""What an upload keeps beside its chats, in the graph: Project, ProjectDoc, Memory, Canvas.

`(:Project)-[:HAS_DOC {position}]->(:ProjectDoc)` (a project's documents, with their text; a doc the
project no longer has is removed), `(:Project)-[:HAS_MEMORY]->(:Memory)` (a project memory: the
export's own link), `(:Conversation)-[:IN_PROJECT]->(:Project)` only where the conversation record
names its project, `(:Conversation)-[:HAS_CANVAS]->(:Canvas)` only where the canvas row names its
chat. Every node is keyed as its table row (chatetl.tables.keepsakes) and written over by the
upload loaded last.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from chatetl.graph.connection import quiet, write_session
from chatetl.layout import KEEPSAKE_TABLES, table_key
from chatetl.storage import ObjectStore
from chatetl.tables import download_table
from chatetl.tables.keepsakes import read_keepsakes

if TYPE_CHECKING:
    from neo4j import Driver, ManagedTransaction

CONSTRAINTS = (
    "CREATE CONSTRAINT project_key IF NOT EXISTS FOR (p:Project) REQUIRE p.key IS UNIQUE",
    "CREATE CONSTRAINT project_doc_key IF NOT EXISTS FOR (d:ProjectDoc) REQUIRE d.key IS UNIQUE",
    "CREATE CONSTRAINT memory_key IF NOT EXISTS FOR (m:Memory) REQUIRE m.key IS UNIQUE",
    "CREATE CONSTRAINT canvas_key IF NOT EXISTS FOR (v:Canvas) REQUIRE v.key IS UNIQUE",
)

_PROJECTS = """
UNWIND $rows AS row
MERGE (p:Project {key: row.key})
SET p += row.props
WITH p, row
OPTIONAL MATCH (p)-[:HAS_DOC]->(d:ProjectDoc)
WHERE NOT d.key IN row.doc_keys
DETACH DELETE d
"""
_DOCS = """
UNWIND $rows AS row
MATCH (p:Project {key: row.project_key})
MERGE (d:ProjectDoc {key: row.key})
SET d += row.props
MERGE (p)-[r:HAS_DOC]->(d)
SET r.position = row.position
"""
_MEMORIES = """
UNWIND $rows AS row
MERGE (m:Memory {key: row.key})
SET m += row.props
WITH m, row
WHERE row.project_key IS NOT NULL
MERGE (p:Project {key: row.project_key})
ON CREATE SET p.project_id = row.project_id, p.platform = row.props.platform
MERGE (p)-[:HAS_MEMORY]->(m)
"""
_CANVASES = """
UNWIND $rows AS row
MERGE (v:Canvas {key: row.key})
SET v += row.props
WITH v, row
WHERE row.conversation_key IS NOT NULL
MATCH (c:Conversation {key: row.conversation_key})
MERGE (c)-[:HAS_CANVAS]->(v)
"""
_IN_PROJECT = """
UNWIND $rows AS row
MATCH (c:Conversation {key: row.conversation_key})
MERGE (p:Project {key: row.project_key})
ON CREATE SET p.project_id = row.project_id, p.platform = row.platform
MERGE (c)-[:IN_PROJECT]->(p)
"""


def project_links(conversation_rows: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The conversations whose record names their project (`meta.project_uuid`, as the readers keep it), from
    conversations-table rows (conversation_key, platform, meta)."""
    links = []
    for row in conversation_rows:
        meta = json.loads(row["meta"]) if row.get("meta") else {}
        project = meta.get("project_uuid") if isinstance(meta, dict) else None
        if isinstance(project, str) and project:
            platform = row["platform"]
            links.append({"conversation_key": row["conversation_key"], "project_key": f"{platform}:{project}", "project_id": project,
                          "platform": platform})
    return links


def load_upload_keepsakes(store: ObjectStore, driver: Driver, day: str, uid: str, conversations: Path,
                          database: str | None = None) -> dict[str, int]:
    """One upload's keepsake tables of a day (those it has) and the project links of its conversations table
    (a local file) into the graph."""
    links = project_links(pq.read_table(conversations, columns=["conversation_key", "platform", "meta"]).to_pylist())
    tables = {}
    with tempfile.TemporaryDirectory() as tmp:
        for table in KEEPSAKE_TABLES:
            key = table_key(table, day, uid)
            if store.head(key) is not None:
                tables[table] = read_keepsakes(download_table(store, key, tmp))
    return load_keepsakes(driver, tables, links, database)


def load_keepsakes(driver: Driver, tables: Mapping[str, list[dict[str, Any]]], links: list[dict[str, str]] | None = None,
                   database: str | None = None) -> dict[str, int]:
    """One upload's keepsake rows (table -> rows, chatetl.tables.keepsakes) and its conversations' project links
    into the graph, in one transaction (an upload keeps few); what was written, by label."""
    projects = tables.get("projects", [])
    docs = tables.get("project_docs", [])
    memories = tables.get("memories", [])
    canvases = tables.get("canvases", [])
    links = links or []
    if not (projects or docs or memories or canvases or links):
        return {}
    doc_keys: dict[str, list[str]] = {}
    doc_rows = []
    for d in docs:
        key = f"{d['project_key']}:{d['doc_id']}"
        doc_keys.setdefault(d["project_key"], []).append(key)
        doc_rows.append({"key": key, "project_key": d["project_key"], "position": d["position"],
                         "props": {"doc_id": d["doc_id"], "filename": d["filename"], "text": d["content"], "created_at": d["created_at"]}})
    project_rows = [{"key": p["project_key"], "doc_keys": doc_keys.get(p["project_key"], []),
                     "props": _props(p, "project_key", "upload_key")} for p in projects]
    memory_rows = [{"key": m["memory_key"], "project_key": m["project_key"], "project_id": _id_of(m["project_key"]),
                    "props": _props(m, "memory_key", "project_key", "upload_key")} for m in memories]
    canvas_rows = [{"key": c["canvas_key"], "conversation_key": c["conversation_key"],
                    "props": _props(c, "canvas_key", "upload_key")} for c in canvases]

    def write(tx: ManagedTransaction) -> None:
        for cypher, rows in ((_PROJECTS, project_rows), (_DOCS, doc_rows), (_MEMORIES, memory_rows), (_CANVASES, canvas_rows),
                             (_IN_PROJECT, links)):
            if rows:
                tx.run(cypher, quiet({"rows": rows})).consume()

    with write_session(driver, database) as session:
        for statement in CONSTRAINTS:
            session.run(statement).consume()
        session.execute_write(write)
    counts = {"Project": len(project_rows), "ProjectDoc": len(doc_rows), "Memory": len(memory_rows), "Canvas": len(canvas_rows),
              "IN_PROJECT": len(links)}
    return {label: n for label, n in counts.items() if n}


def _props(row: Mapping[str, Any], *left_out: str) -> dict[str, Any]:
    """A row's columns as node properties (nulls left out: Neo4j stores none)."""
    return {k: v for k, v in row.items() if k not in left_out and v is not None}


def _id_of(project_key: str | None) -> str | None:
    return project_key.split(":", 1)[1] if project_key else None
