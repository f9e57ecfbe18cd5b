"""One collect run: each session found copied to the bucket's `raw/agents/...` when its bytes are new.

A session always goes to the same key, so a grown session replaces its earlier copy there (the
pipeline then re-reads the upload: newest state wins) and nothing else is ever deleted: a session the
agent purged stays collected. What is unchanged is known without reading it (the size and mtime the
local state file recorded when it was copied) or, without that state, by its content hash against
the bucket's (`put_bytes_if_changed`). An append-only log that became shorter than its copy is not
copied over it. Every copy is complete before the state records it, so a run cut short resumes
where it stopped, and two runs never differ in what the bucket ends up holding.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chatetl.collect.agents import Session
from chatetl.collect.opencode_bundles import Unsettled
from chatetl.layout import agent_session_key
from chatetl.storage import ObjectStore, file_md5

STATE_VERSION = 1


@dataclass
class Outcome:
    """What a run did, per agent: sessions found, copied (new or grown), unchanged, and left for a later run."""

    found: dict[str, int] = field(default_factory=dict)
    copied: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)  # a shorter local copy of an append-only log: the bucket's kept
    retry: dict[str, int] = field(default_factory=dict)  # being written (did not parse) or unreadable: next run
    keys: list[str] = field(default_factory=list)  # the keys written

    def count(self, what: dict[str, int], agent: str) -> None:
        what[agent] = what.get(agent, 0) + 1

    def summary(self) -> dict[str, Any]:
        return {name: dict(sorted(getattr(self, name).items())) for name in ("found", "copied", "unchanged", "kept", "retry")}


class State:
    """The local record of what was copied: key -> {md5, size, origin, stat}. Only a shortcut: without
    it a run reads every session and asks the bucket."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        if path is not None and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            if isinstance(data, dict) and data.get("version") == STATE_VERSION and isinstance(data.get("sessions"), dict):
                self.entries = data["sessions"]

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".collect-state-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": STATE_VERSION, "sessions": self.entries}, f, sort_keys=True)
        os.replace(tmp, self.path)


def stat_of(session: Session) -> list[float] | None:
    """(size, mtime_ns) of a session's file; None for a built bundle (its bytes say whether it changed)."""
    if session.path is None:
        return None
    st = session.path.stat()
    return [st.st_size, st.st_mtime_ns]


def key_of(session: Session) -> str:
    return agent_session_key(session.agent, session.parts)


def collect(store: ObjectStore, sessions: Iterable[Session], state: State, dry_run: bool = False) -> Outcome:
    """Copy what is new or grown; the state saved every few copies and at the end."""
    out = Outcome()
    since_save = 0
    for session in sessions:
        out.count(out.found, session.agent)
        try:
            what = _one(store, session, state, dry_run, out)
        except (OSError, ValueError, Unsettled):  # unreadable, or being written: the next run takes it
            what = out.retry
        out.count(what, session.agent)
        if what is out.copied and not dry_run:
            since_save += 1
            if since_save >= 50:
                state.save()
                since_save = 0
    if not dry_run:
        state.save()
    return out


def _one(store: ObjectStore, session: Session, state: State, dry_run: bool, out: Outcome) -> dict[str, int]:
    key = key_of(session)
    known = state.entries.get(key)
    stat = stat_of(session)
    if known is not None and stat is not None and known.get("stat") == stat and known.get("origin") == session.origin:
        return out.unchanged  # the very file copied last time, untouched since
    data: bytes | None = None
    if session.path is not None:  # read as it streams: a long session never sits in memory
        size, digest = session.path.stat().st_size, file_md5(session.path)
        if session.rewritten:
            json.loads(session.path.read_bytes())  # rewritten in place, not appended: a half-written file waits
    else:
        data = session.read()
        size, digest = len(data), hashlib.md5(data, usedforsecurity=False).hexdigest()
    head = store.head(key)
    if head is not None and head.size == size and head.etag == digest:
        what = out.unchanged
    elif head is not None and session.append_only and size < head.size:
        what = out.kept  # the log lost its end locally: the longer copy collected before stays
    else:
        if not dry_run:
            if data is None:  # (a live log may have grown since it was hashed: the next run sees its new stat)
                assert session.path is not None
                store.write_file(key, session.path, "application/json")
            else:
                store.write_bytes(key, data, "application/json")
            out.keys.append(key)
        what = out.copied
    if not dry_run:
        state.entries[key] = {"md5": digest, "size": size, "stat": stat, "origin": session.origin}
    return what
