"""What an upload keeps beside its chats, in the graph: Project, ProjectDoc, Memory, Canvas.

`(:Project)-[:HAS_DOC {position}]->(:ProjectDoc)` (a project's documents, with their text; a doc the
project no longer has is removed), `(:Project)-[:HAS_MEMORY]->(:Memory)` (a project memory: the
export's own link), `(:Conversation)-[:IN_PROJECT]->(:Project)` only where the conversation record
names its project, `(:Conversation)-[:HAS_CANVAS]->(:Canvas)` only where the canvas row names its
chat, `(:ProjectDoc|Memory|Canvas)-[:HAS_DOCUMENT]->(:Document)` its text for search (written by
the documents stage from the state its node shows, `load_keepsake_documents`; removed with the node,
or when the state it showed leaves). Every node is keyed as its table row (chatetl.tables.keepsakes).
A state is written only over an older one (`keepsake_order`, decided under the node's lock), and a node
records the uploads that hold it (`uploads`, "day/upload-id"): when the last leaves, so does the
node; when the one whose state it shows leaves, the newest state the others hold takes over.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from chatetl.graph.connection import quiet, run_read, run_write, value_fault, write_session
from chatetl.graph.properties import SET_CHANGED_DOCUMENTS
from chatetl.layout import KEEPSAKE_TABLES, NORMALIZED_PREFIX, table_key
from chatetl.model import order_of
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
OPTIONAL MATCH (d)-[:HAS_DOCUMENT]->(doc:Document)
OPTIONAL MATCH (doc)-[:HAS_CHUNK]->(c:Chunk)
DETACH DELETE c, doc, d
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


KeepsakeOrder = tuple[float, float, float, int, str]


def keepsake_order(own: float, exported_at: float, arrived_at: float, platform: str | None, digest: str) -> KeepsakeOrder:
    """The one order of a keepsake's states (the larger wins): its own update time where the export gives one
    (`own`, a project's `updated_at`; else 0), then the export's time (`exported_at`), then the upload's order
    (`arrived_at`: when its version arrived in raw/), then `model.order_of`'s format and state hash. Two
    different states never tie, so no load order changes the graph."""
    _, fidelity, tiebreak = order_of(exported_at, platform, digest)
    return float(own), float(exported_at), float(arrived_at), fidelity, tiebreak


# each keepsake label: its table, the column of its key
_TABLES = {"Project": ("projects", "project_key"), "Memory": ("memories", "memory_key"), "Canvas": ("canvases", "canvas_key")}

# (labels come from _TABLES, never from data) the nodes of $keys, locked and made, with their stored order
_STORED = """
UNWIND $keys AS key
MERGE (n:{label} {{key: key}})
SET n.key = key
RETURN n.key AS key, n.state_version AS version, n.state_exported AS exported, n.state_arrived AS arrived, n.platform AS platform, n.state_hash AS digest
"""
_HOLD = """
UNWIND $keys AS key
MATCH (n:{label} {{key: key}})
WHERE NOT $at IN coalesce(n.uploads, [])
SET n.uploads = coalesce(n.uploads, []) + $at
"""
# the upload at $at no longer holds these nodes: what is left of each (its holders; whether it showed $at's state)
_RELEASE = """
MATCH (n:{label})
WHERE $at IN n.uploads AND NOT n.key IN $keep
SET n.uploads = [u IN n.uploads WHERE u <> $at]
RETURN n.key AS key, n.uploads AS holders, coalesce(n.state_from = $at, false) AS fell
"""
_FORGET_STATE = """
UNWIND $keys AS key
MATCH (n:{label} {{key: key}})
REMOVE n.state_hash, n.state_version, n.state_exported, n.state_arrived, n.state_from
"""
_HOLDER_LOCATIONS = """
MATCH (n:{label}) WHERE n.uploads IS NOT NULL
UNWIND n.uploads AS at
RETURN DISTINCT at
"""
# each label: its nodes' Documents (a keepsake with text is searched like a chat: chatetl.rag.keepsake_documents)
_DOCUMENTS_OF = {
    "Project": "MATCH (:Project {key: key})-[:HAS_DOC]->(:ProjectDoc)-[:HAS_DOCUMENT]->(d:Document)",
    "Memory": "MATCH (:Memory {key: key})-[:HAS_DOCUMENT]->(d:Document)",
    "Canvas": "MATCH (:Canvas {key: key})-[:HAS_DOCUMENT]->(d:Document)",
}
# (labels come from _DOCUMENTS_OF, never from data) the Documents of these nodes, with their chunks
_DROP_DOCUMENTS = "UNWIND $keys AS key {match} OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c:Chunk) DETACH DELETE c, d"
_DELETE = {  # in this order (after their Documents); a project a conversation still names stays as the bare node its link made
    "Project": ("UNWIND $keys AS key MATCH (:Project {key: key})-[:HAS_DOC]->(d:ProjectDoc) DETACH DELETE d",
                "UNWIND $keys AS key MATCH (p:Project {key: key}) WHERE NOT (p)<-[:IN_PROJECT]-() DETACH DELETE p",
                "UNWIND $keys AS key MATCH (p:Project {key: key}) SET p = {key: p.key, project_id: p.project_id, platform: p.platform}"),
    "Memory": ("UNWIND $keys AS key MATCH (m:Memory {key: key}) DETACH DELETE m",),
    "Canvas": ("UNWIND $keys AS key MATCH (v:Canvas {key: key}) DETACH DELETE v",),
}
# a Project only a link made (no table row ever wrote it) that nothing links any more
_LOOSE_STUBS = "MATCH (p:Project) WHERE p.state_hash IS NULL AND p.uploads IS NULL AND NOT (p)--() DELETE p"


def load_upload_keepsakes(store: ObjectStore, driver: Driver, day: str, uid: str, conversations: Path,
                          database: str | None = None) -> dict[str, int]:
    """One upload's keepsake tables of a day (those it has) and the project links of its conversations table
    (a local file) into the graph; a node this upload held before and no longer holds is released."""
    links = project_links(pq.read_table(conversations, columns=["conversation_key", "platform", "meta"]).to_pylist())
    tables, arrived = _tables_at(store, day, uid)
    at = f"{day}/{uid}"
    counts = load_keepsakes(driver, tables, links, database, at=at, exported_at=exported_at(conversations), arrived_at=arrived)
    held = {label: [row[column] for row in tables.get(table, [])] for label, (table, column) in _TABLES.items()}
    _release(store, driver, at, held, database)
    return counts


def retract_keepsakes(store: ObjectStore, driver: Driver, database: str | None = None) -> int:
    """The uploads whose keepsake tables left the bucket (a deleted or replaced upload, chatetl.ingest.partition)
    leave the nodes they held: a node no upload holds any more is deleted, one whose state came from such an upload
    takes the newest state another holder has. One listing of the keepsake tables and one query a label: keepsakes
    are few. How many holdings were released."""
    # the graph's holders read before the bucket is listed: a holder a load records meanwhile had its tables put first
    held = {label: [row["at"] for row in run_read(driver, database, _HOLDER_LOCATIONS.format(label=label))] for label in _TABLES}
    released = 0
    for label, (table, _) in _TABLES.items():
        live = {_location(o.key, table) for o in store.list(f"{NORMALIZED_PREFIX}{table}/")}
        for at in held[label]:
            if at not in live:
                _release(store, driver, at, {label: []}, database)
                released += 1
    run_write(driver, database, _LOOSE_STUBS)
    return released


def load_keepsakes(driver: Driver, tables: Mapping[str, list[dict[str, Any]]], links: list[dict[str, str]] | None = None,
                   database: str | None = None, at: str | None = None, exported_at: float = 0.0,
                   arrived_at: float = 0.0) -> dict[str, int]:
    """One upload's keepsake rows (table -> rows, chatetl.tables.keepsakes) and its conversations' project links
    into the graph, in one transaction (an upload keeps few): each state written only over an older one
    (`keepsake_order`, with the upload's `exported_at` and `arrived_at`), each node recorded as held by `at` (the upload's
    "day/upload-id"; None: `chatetl load`, no holder). What was written, by label."""
    links = links or []
    project_rows, doc_rows, memory_rows, canvas_rows = _state_rows(tables)
    if not (project_rows or doc_rows or memory_rows or canvas_rows or links):
        return {}
    for label, rows in (("Project", project_rows), ("Memory", memory_rows), ("Canvas", canvas_rows)):
        for row in rows:
            digest = row.pop("digest")
            updated = row["props"].get("updated_at")
            row["order"] = keepsake_order(updated.timestamp() if updated else 0.0, exported_at, arrived_at,
                                          row["props"].get("platform"), digest)
            row["props"] |= {"state_version": row["order"][0], "state_exported": exported_at,
                             "state_arrived": arrived_at, "state_hash": digest, "state_from": at}
    written: dict[str, int] = {}

    def write(tx: ManagedTransaction) -> None:
        written.clear()
        winners = {label: _newer(tx, label, rows) for label, rows in
                   (("Project", project_rows), ("Memory", memory_rows), ("Canvas", canvas_rows))}
        won_docs = [d for p in winners["Project"] for d in doc_rows.get(p["key"], [])]
        for cypher, rows in ((_PROJECTS, winners["Project"]), (_DOCS, won_docs), (_MEMORIES, winners["Memory"]),
                             (_CANVASES, winners["Canvas"]), (_IN_PROJECT, links)):
            if rows:
                tx.run(cypher, quiet({"rows": [{k: v for k, v in r.items() if k != "order"} for r in rows]})).consume()
        if at is not None:
            for label, rows in (("Project", project_rows), ("Memory", memory_rows), ("Canvas", canvas_rows)):
                if rows:
                    tx.run(_HOLD.format(label=label), quiet({"keys": [r["key"] for r in rows], "at": at})).consume()
        written.update({"Project": len(winners["Project"]), "ProjectDoc": len(won_docs), "Memory": len(winners["Memory"]),
                        "Canvas": len(winners["Canvas"]), "IN_PROJECT": len(links)})

    with write_session(driver, database) as session:
        for statement in CONSTRAINTS:
            session.run(statement).consume()
        session.execute_write(write)
    return {label: n for label, n in written.items() if n}


def _state_rows(tables: Mapping[str, list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]],
                                                                   list[dict[str, Any]], list[dict[str, Any]]]:
    """An upload's keepsake rows as the load writes them: projects, their docs (by project key), memories and
    canvases, each node's row with the `digest` of its state (what it says, its docs with theirs; not where it
    was read, `source_file`: the same export at another path)."""
    doc_keys: dict[str, list[str]] = {}
    doc_rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in tables.get("project_docs", []):
        key = f"{d['project_key']}:{d['doc_id']}"
        doc_keys.setdefault(d["project_key"], []).append(key)
        doc_rows[d["project_key"]].append({"key": key, "project_key": d["project_key"], "position": d["position"],
                                           "props": {"doc_id": d["doc_id"], "filename": d["filename"], "text": d["content"],
                                                     "created_at": d["created_at"]}})
    project_rows = [{"key": p["project_key"], "doc_keys": doc_keys.get(p["project_key"], []),
                     "props": _props(p, "project_key", "upload_key")} for p in tables.get("projects", [])]
    memory_rows = [{"key": m["memory_key"], "project_key": m["project_key"], "project_id": _id_of(m["project_key"]),
                    "props": _props(m, "memory_key", "project_key", "upload_key")} for m in tables.get("memories", [])]
    canvas_rows = [{"key": c["canvas_key"], "conversation_key": c["conversation_key"],
                    "props": _props(c, "canvas_key", "upload_key")} for c in tables.get("canvases", [])]
    for rows in (project_rows, memory_rows, canvas_rows):
        for row in rows:
            said = {k: v for k, v in row["props"].items() if k != "source_file"}
            state = [said, [d["props"] | {"position": d["position"]} for d in doc_rows.get(row["key"], [])]]
            row["digest"] = hashlib.sha256(json.dumps(state, sort_keys=True, default=str, ensure_ascii=False).encode()).hexdigest()
    return project_rows, doc_rows, memory_rows, canvas_rows


def keepsake_digests(tables: Mapping[str, list[dict[str, Any]]]) -> dict[tuple[str, str], str]:
    """(label, key) -> the state digest of each Project, Memory and Canvas of an upload's keepsake rows: the
    `state_hash` its node holds while this state is the one it shows."""
    project_rows, _, memory_rows, canvas_rows = _state_rows(tables)
    return {(label, row["key"]): row["digest"] for label, rows in (("Project", project_rows), ("Memory", memory_rows),
                                                                   ("Canvas", canvas_rows)) for row in rows}


def exported_at(conversations: Path) -> float:
    """An upload's time by the source's clock: the newest update (else creation) time of the conversations its
    table holds (0 for none). Not its arrival in the bucket: a re-uploaded old export stays old; a memory or a
    canvas has no clock of its own."""
    table = pq.read_table(conversations, columns=["updated_at", "created_at"])
    times = [pc.max(table[column]).as_py() for column in ("updated_at", "created_at")]
    return max((t.timestamp() for t in times if t is not None), default=0.0)


def _newer(tx: ManagedTransaction, label: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose state is newer than the one their node holds, the nodes locked (and made) first."""
    if not rows:
        return []
    stored = {r["key"]: r for r in tx.run(_STORED.format(label=label), quiet({"keys": [r["key"] for r in rows]})).data()}
    winners = []
    for row in rows:
        old = stored.get(row["key"])
        if old is None or old["digest"] is None or row["order"] > _stored_order(old):
            winners.append(row)
    return winners


def _stored_order(node: Mapping[str, Any]) -> KeepsakeOrder:
    """A node's order as it was written (its `state_*` properties)."""
    return keepsake_order(node["version"] or 0.0, node["exported"] or 0.0, node["arrived"] or 0.0, node["platform"], node["digest"])


def _release(store: ObjectStore, driver: Driver, at: str, held: Mapping[str, list[str]], database: str | None) -> None:
    """The upload at `at` now holds only `held` (label -> keys; a label left out: untouched): every other node it
    held loses it; one no upload holds any more is deleted; one that showed its state takes the newest state its
    other holders have (its stored state forgotten, their rows loaded again)."""
    for label, keep in held.items():
        left = run_write(driver, database, _RELEASE.format(label=label), at=at, keep=keep)
        orphans = [r["key"] for r in left if not r["holders"]]
        fallen = {r["key"]: r["holders"] for r in left if r["holders"] and r["fell"]}
        gone = orphans + list(fallen)  # (a fallen node's Documents held the leaving upload's text: its holders' come back with their files)
        if gone:
            run_write(driver, database, _DROP_DOCUMENTS.format(match=_DOCUMENTS_OF[label]), keys=gone)
        for cypher in _DELETE[label] if orphans else ():
            run_write(driver, database, cypher, keys=orphans)
        if fallen:
            run_write(driver, database, _FORGET_STATE.format(label=label), keys=list(fallen))
            _reload(store, driver, label, fallen, database)


def _reload(store: ObjectStore, driver: Driver, label: str, holders: Mapping[str, list[str]], database: str | None) -> None:
    """These nodes' rows loaded again from each upload still holding them (the newest wins, as in any load)."""
    table, column = _TABLES[label]
    per_place: dict[str, set[str]] = defaultdict(set)
    for key, places in holders.items():
        for at in places:
            per_place[at].add(key)
    for at, keys in sorted(per_place.items()):
        day, uid = at.split("/", 1)
        tables, arrived = _tables_at(store, day, uid)
        rows = {table: [r for r in tables.get(table, []) if r[column] in keys]}
        if table == "projects":
            rows["project_docs"] = [d for d in tables.get("project_docs", []) if d["project_key"] in keys]
        with tempfile.TemporaryDirectory() as tmp:
            c_key = table_key("conversations", day, uid)
            when = exported_at(download_table(store, c_key, tmp)) if store.head(c_key) is not None else 0.0
        load_keepsakes(driver, rows, None, database, at=at, exported_at=when, arrived_at=arrived)


def upload_keepsake_tables(store: ObjectStore, day: str, uid: str) -> dict[str, list[dict[str, Any]]]:
    """The keepsake tables one upload has on a day (table -> rows; those it lacks left out)."""
    return _tables_at(store, day, uid)[0]


def _tables_at(store: ObjectStore, day: str, uid: str) -> tuple[dict[str, list[dict[str, Any]]], float]:
    """The keepsake tables one upload has on a day (table -> rows), and when the upload arrived in raw/, as its
    tables say (the graph is rebuilt from normalized/ alone: deploy/README.md's restore drill)."""
    tables = {}
    with tempfile.TemporaryDirectory() as tmp:
        for table in KEEPSAKE_TABLES:
            key = table_key(table, day, uid)
            if store.head(key) is not None:
                tables[table] = read_keepsakes(download_table(store, key, tmp))
    arrived = next((row["upload_arrived_at"] for rows in tables.values() for row in rows if row.get("upload_arrived_at")), None)
    return tables, arrived.timestamp() if arrived is not None else 0.0


def _location(key: str, table: str) -> str:
    """"day/upload-id" of a table's key (normalized/<table>/date=D/<upload-id>.parquet)."""
    day_part, name = key.removeprefix(f"{NORMALIZED_PREFIX}{table}/").split("/", 1)
    return f"{day_part.removeprefix('date=')}/{name.removesuffix('.parquet')}"


def _props(row: Mapping[str, Any], *left_out: str) -> dict[str, Any]:
    """A row's columns as node properties (nulls left out: Neo4j stores none)."""
    return {k: v for k, v in row.items() if k not in left_out and k != "upload_arrived_at" and v is not None}


def _id_of(project_key: str | None) -> str | None:
    return project_key.split(":", 1)[1] if project_key else None


# A keepsake's Document (chatetl.rag.keepsake_documents) by its `kind`: the node whose state it follows (its
# `owner`), and the node it hangs from, `(n)-[:HAS_DOCUMENT]->(:Document)`: a project's doc, a memory, a canvas
DOCUMENT_OWNERS = {"project_doc": "Project", "memory": "Memory", "canvas": "Canvas"}
_DOCUMENT_NODE = {
    "Project": "MATCH (o)-[:HAS_DOC]->(n:ProjectDoc {key: row.keepsake_key})",
    "Memory": "WITH row, o AS n",
    "Canvas": "WITH row, o AS n",
}
# (labels come from DOCUMENT_OWNERS, never from data) a Document is written only from the state its owner shows,
# so two uploads' states of one keepsake never both write it, and no load order changes it
_UPSERT_KEEPSAKE_DOCUMENTS = """
UNWIND $rows AS row
MATCH (o:{owner} {{key: row.owner_key}})
WHERE o.state_hash = row.state_hash
{node}
MERGE (d:Document {{key: row.key}})
MERGE (n)-[:HAS_DOCUMENT]->(d)
""" + SET_CHANGED_DOCUMENTS


# (labels come from DOCUMENT_OWNERS) the Documents no node of their owner's label shows the state of: another
# upload's state of their keepsake won (or the keepsake left the graph); left out of the rag/ files
_SUPERSEDED_KEEPSAKE_DOCUMENTS = """
UNWIND $rows AS row
WITH row WHERE NOT EXISTS {{ MATCH (o:{owner}) WHERE o.state_hash = row.state_hash }}
RETURN row.key AS key
"""


def document_kind(key: str) -> str | None:
    """A Document key's keepsake kind (`project_doc:…`, `memory:…`, `canvas:…`); None: a conversation's."""
    kind = key.split(":", 1)[0]
    return kind if kind in DOCUMENT_OWNERS else None


def is_keepsake_document(doc: Mapping[str, Any]) -> bool:
    """Whether a Document (its properties, or its state: its key) is a keepsake's (a project's doc, a memory, a canvas)."""
    return document_kind(doc["key"]) is not None


def superseded_keepsake_documents(driver: Driver, docs: Iterable[Mapping[str, Any]], database: str | None = None) -> set[str]:
    """Keys of keepsakes' Documents (their `key` and `state_hash`) whose keepsake in the graph shows another state:
    what a Document of this state would not be written over (load_keepsake_documents). Keepsakes are few: a
    label's nodes are read whole."""
    return {r["key"] for owner, rows in _by_owner(docs).items()
            for r in run_read(driver, database, _SUPERSEDED_KEEPSAKE_DOCUMENTS.format(owner=owner),
                              rows=[{"key": row["key"], "state_hash": row["state_hash"]} for row in rows])}


def load_keepsake_documents(driver: Driver, docs: Iterable[dict[str, Any]], database: str | None = None,
                            failures: list[tuple[str, BaseException]] | None = None) -> int:
    """Keepsakes' Document nodes (their properties: `kind`, `owner_key`, `keepsake_key`, `state_hash`), each hung
    from its keepsake node where its owner shows the state it was made from (else left out: the graph holds
    another state). How many Documents changed. With `failures`, one Document the server refuses for what it
    holds fails alone (key, error), the others written."""
    written = 0
    for owner, rows in _by_owner(docs).items():
        cypher = _UPSERT_KEEPSAKE_DOCUMENTS.format(owner=owner, node=_DOCUMENT_NODE[owner])
        try:
            written += run_write(driver, database, cypher, rows=rows)[0]["written"]
        except Exception as exc:
            if failures is None or not value_fault(exc):
                raise
            for row in rows:  # (keepsakes are few: one at a time finds the one refused)
                try:
                    written += run_write(driver, database, cypher, rows=[row])[0]["written"]
                except Exception as alone:
                    if not value_fault(alone):
                        raise
                    failures.append((row["key"], alone))
    return written


def _by_owner(docs: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Keepsakes' Documents grouped by the label of the node whose state they follow (DOCUMENT_OWNERS)."""
    by_owner: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for doc in docs:
        by_owner[DOCUMENT_OWNERS[document_kind(doc["key"]) or ""]].append(doc)
    return by_owner
