"""opencode's sessions as one bundle each, the shape `opencode export` prints:
`{"info": session, "messages": [{"info": message, "parts": [part ...]}], "project": project}`.

opencode keeps a session in many records: rows of its SQLite database `opencode.db` (since 1.2), or
one JSON file a session, message and part under `storage/` (before; the files stay after the
migration). Both are read; a session in both is taken from the one updated last. The database is
copied with SQLite's backup API first, so a live writer is never blocked nor seen half-way. A bundle
is serialized with sorted keys and records in id order, so an unchanged session gives the same bytes.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Bundle:
    session_id: str
    project: str
    updated: float  # epoch seconds
    build: Callable[[], bytes]


def bundles(root: Path) -> Iterator[Bundle]:
    """Every session under opencode's data folder `root`, newest source first when one is in both."""
    found: dict[str, tuple[float, Bundle]] = {}
    for bundle in [*_from_storage(root / "storage"), *_from_database(root / "opencode.db")]:
        if bundle.session_id not in found or bundle.updated > found[bundle.session_id][0]:
            found[bundle.session_id] = (bundle.updated, bundle)
    for _updated, bundle in sorted(found.values(), key=lambda ub: ub[1].session_id):
        yield bundle


def serialize(info: dict[str, Any], messages: list[dict[str, Any]], parts: list[dict[str, Any]],
              project: dict[str, Any] | None) -> bytes:
    by_message: dict[str, list[dict[str, Any]]] = {}
    for part in parts:
        by_message.setdefault(str(part.get("messageID")), []).append(part)
    items: list[dict[str, Any]] = []
    for message in sorted(messages, key=_id):
        items.append({"info": message, "parts": sorted(by_message.get(str(message.get("id")), []), key=_id)})
    bundle: dict[str, Any] = {"info": info, "messages": items}
    if project:
        bundle["project"] = project
    return json.dumps(bundle, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def _id(record: dict[str, Any]) -> str:
    return str(record.get("id"))


def _project_name(info: dict[str, Any], project: dict[str, Any] | None) -> str:
    worktree = project.get("worktree") if project else None
    for value in (worktree, info.get("directory")):
        if isinstance(value, str) and value.strip("/\\"):
            return Path(value.replace("\\", "/")).name
    return str(info.get("projectID") or "opencode")


def _updated(info: dict[str, Any]) -> float:
    time = info.get("time")
    value = (time.get("updated") or time.get("created") or 0) if isinstance(time, dict) else 0
    return float(value) / 1000.0 if isinstance(value, (int, float)) else 0.0


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None  # being rewritten (opencode writes in place): the next run takes it


def _from_storage(storage: Path) -> Iterator[Bundle]:
    # storage/project/<projectID>.json, session/<projectID>/<id>.json, message/<sessionID>/<id>.json,
    # part/<messageID>/<id>.json
    if not storage.is_dir():
        return
    for path in sorted(storage.glob("session/*/*.json")):
        info = _load(path)
        if not isinstance(info, dict) or not isinstance(info.get("id"), str):
            continue
        project = _load(storage / "project" / f"{path.parent.name}.json")
        project = project if isinstance(project, dict) else None
        yield Bundle(info["id"], _project_name(info, project), _updated(info), _storage_builder(storage, info, project))


class Unsettled(Exception):
    """A session's file is being rewritten (it does not parse): the session is taken on a later run."""


def _settled(path: Path) -> dict[str, Any]:
    record = _load(path)
    if not isinstance(record, dict):
        raise Unsettled(f"{path}: not a whole JSON object (being written?)")
    return record


def _storage_builder(storage: Path, info: dict[str, Any], project: dict[str, Any] | None) -> Callable[[], bytes]:
    def build() -> bytes:
        messages = [_settled(p) for p in sorted((storage / "message" / info["id"]).glob("*.json"))]
        parts = [_settled(p) for m in messages for p in sorted((storage / "part" / str(m.get("id"))).glob("*.json"))]
        return serialize(info, messages, parts, project)

    return build


def _from_database(db: Path) -> Iterator[Bundle]:
    if not db.is_file():
        return
    with tempfile.TemporaryDirectory(prefix="chatetl-opencode-") as tmp:
        copy = Path(tmp) / "opencode.db"
        try:
            source = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                target = sqlite3.connect(copy)
                source.backup(target)
                target.close()
            finally:
                source.close()
            rows = _database_sessions(copy)
        except sqlite3.Error:
            return
    yield from rows


def _database_sessions(copy: Path) -> list[Bundle]:
    """Each session of a copy of opencode.db, built at once (the copy goes when the run's folder does)."""
    con = sqlite3.connect(copy)
    con.row_factory = sqlite3.Row
    try:
        projects = {row["id"]: dict(row) for row in con.execute("SELECT * FROM project")} if _has(con, "project") else {}
        out = []
        for row in con.execute("SELECT * FROM session ORDER BY id"):
            info = _session_info(dict(row))
            messages = [
                {**_data(r["data"]), "id": r["id"], "sessionID": info["id"]}
                for r in con.execute("SELECT id, data FROM message WHERE session_id = ? ORDER BY id", (info["id"],))
            ]
            parts = [
                {**_data(r["data"]), "id": r["id"], "messageID": r["message_id"], "sessionID": info["id"]}
                for r in con.execute("SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id", (info["id"],))
            ]
            project = projects.get(info.get("projectID"))
            out.append(Bundle(info["id"], _project_name(info, project), _updated(info), _held(serialize(info, messages, parts, project))))
        return out
    finally:
        con.close()


def _held(data: bytes) -> Callable[[], bytes]:
    return lambda: data


def _has(con: sqlite3.Connection, table: str) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def _data(value: Any) -> dict[str, Any]:
    try:
        data = json.loads(value) if isinstance(value, (str, bytes)) else None
    except ValueError:
        data = None
    return data if isinstance(data, dict) else {}


def _session_info(row: dict[str, Any]) -> dict[str, Any]:
    """A `session` row as the Session object opencode's JSON files hold."""
    info: dict[str, Any] = {"id": row["id"]}
    for column, key in (("project_id", "projectID"), ("parent_id", "parentID"), ("slug", "slug"), ("directory", "directory"),
                        ("title", "title"), ("version", "version")):
        if row.get(column) is not None:
            info[key] = row[column]
    info["time"] = {k: row[c] for c, k in (("time_created", "created"), ("time_updated", "updated")) if row.get(c) is not None}
    if row.get("share_url"):
        info["share"] = {"url": row["share_url"]}
    return info
