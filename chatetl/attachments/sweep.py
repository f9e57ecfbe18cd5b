"""Attachments no upload refers to leave the bucket; bytes a live upload or a running ingest uses never do.

What an upload's record (chatetl.attachments.refs) stops naming, because the upload left (deleted, moved)
or its new version holds fewer files, is written down (`state/attachments/let-go/`); `sweep` deletes each
such file (with its exported copies) and by-content record that no upload's record names. A run resolving
an upload's files announces itself (`resolving`, `state/attachments/in-flight/`) until its record is
written: while one is in flight, a file younger than the grace period stays (it may be that run's, not yet
in its record) and waits for a later sweep. A run that found a file a sweep took meanwhile stores it
again once its record is written (chatetl.attachments.resolve, `restore_missing`), so no race costs a
live upload its bytes. An in-flight record older than the grace period is a run that died. Sweeping
twice is harmless; an upload replayed after its deletion stores its files again.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from chatetl.attachments.refs import Refs, hold, named_among
from chatetl.layout import (
    ATTACHMENTS_IN_FLIGHT_PREFIX,
    ATTACHMENTS_LET_GO_PREFIX,
    ATTACHMENTS_SWEPT_KEY,
    attachment_key,
    attachments_in_flight_key,
    attachments_let_go_key,
    attachments_of_content_key,
    export_file_prefix,
)
from chatetl.storage import ObjectStore

GRACE = timedelta(hours=1)  # how long a running ingest may take between storing a file and naming it in its record


def refer(store: ObjectStore, uid: str, hashes: Iterable[str], content: str | None = None, grace: timedelta = GRACE,
          run: str | None = None) -> list[str]:
    """Upload `uid` (bytes of digest `content`) now refers to exactly `hashes`; what it let go is swept (`run`:
    the caller's own in-flight record, which protects none of it). The keys deleted."""
    if let_go(store, uid, hold(store, uid, set(hashes), content)) is None:
        return []
    return sweep(store, grace, run)


def release(store: ObjectStore, uid: str, grace: timedelta = GRACE) -> list[str]:
    """Upload `uid` left the bucket: it refers to nothing any more (the keys that left with it)."""
    return refer(store, uid, (), grace=grace)


def let_go(store: ObjectStore, uid: str, refs: Refs) -> str | None:
    """Record what `uid` no longer refers to (named by content: recording it twice writes one record)."""
    if not refs:
        return None
    body = {"upload": uid, "files": sorted(refs.files), "contents": sorted(refs.contents)}
    data = json.dumps(body, sort_keys=True).encode()
    key = attachments_let_go_key(hashlib.sha256(data).hexdigest()[:24])
    store.write_bytes(key, data, "application/json")
    return key


@contextmanager
def resolving(store: ObjectStore, uid: str) -> Iterator[str]:
    """While an ingest resolves upload `uid`'s files: its in-flight record (the key), removed after."""
    key = attachments_in_flight_key(uid, uuid.uuid4().hex[:12])
    store.write_bytes(key, b"{}", "application/json")
    try:
        yield key
    finally:
        store.delete(key)


def sweep(store: ObjectStore, grace: timedelta = GRACE, run: str | None = None) -> list[str]:
    """Every let-go file and by-content record that no upload's record names, deleted; a file younger than
    `grace` stays while a run other than `run` is in flight, its let-go record kept for a later sweep. The
    keys deleted."""
    pending = {}
    for key in [o.key for o in store.list(ATTACHMENTS_LET_GO_PREFIX) if o.key.endswith(".json")]:
        if (fetched := store.fetch(key)) is not None:  # (None: another sweep took it)
            pending[key] = _let_go_body(fetched[0])
    if not pending:
        return []
    young = _server_now(store) - grace
    busy = _in_flight(store, young, run)
    named = named_among(store, Refs(frozenset().union(*(let.files for _, let in pending.values())),
                                    frozenset().union(*(let.contents for _, let in pending.values()))))
    deleted: list[str] = []
    for key, (uid, let) in pending.items():
        waiting = set()
        for h in sorted(let.files - named.files):
            info = store.head(attachment_key(h))
            if busy and info is not None and info.last_modified > young:
                waiting.add(h)
            else:
                deleted += _delete_file(store, h, info is not None)
        for digest in sorted(let.contents - named.contents):
            content_key = attachments_of_content_key(digest)
            if store.head(content_key) is not None:
                store.delete(content_key)
                deleted.append(content_key)
        if let_go(store, uid, Refs(frozenset(waiting))) != key:
            store.delete(key)
    return deleted


def _server_now(store: ObjectStore) -> datetime:
    """The store's own time (what it stamps objects with), so the grace never depends on this machine's clock."""
    return store.put_bytes(ATTACHMENTS_SWEPT_KEY, b"", "application/octet-stream").last_modified


def _in_flight(store: ObjectStore, young: datetime, run: str | None) -> bool:
    """Whether a run other than `run` is resolving files now; the records of runs that died go."""
    busy = False
    for info in list(store.list(ATTACHMENTS_IN_FLIGHT_PREFIX)):
        if info.last_modified <= young:
            store.delete(info.key)
        elif info.key != run:
            busy = True
    return busy


def _let_go_body(data: bytes) -> tuple[str, Refs]:
    """A let-go record's upload and names (only well-formed ones: a name never chooses a key)."""
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        body = {}
    body = body if isinstance(body, dict) else {}
    files, contents = body.get("files"), body.get("contents")
    return str(body.get("upload") or ""), Refs(
        frozenset(h for h in files if isinstance(h, str) and _valid(attachment_key, h)) if isinstance(files, list) else frozenset(),
        frozenset(d for d in contents if isinstance(d, str) and _valid(attachments_of_content_key, d)) if isinstance(contents, list) else frozenset(),
    )


def _valid(make_key: Callable[[str], str], name: str) -> bool:
    try:
        make_key(name)
    except ValueError:
        return False
    return True


def _delete_file(store: ObjectStore, h: str, stored: bool) -> list[str]:
    """A file's exported copies and its bytes deleted; their keys."""
    keys = [o.key for o in store.list(export_file_prefix(h))] + ([attachment_key(h)] if stored else [])
    for key in keys:
        store.delete(key)
    return keys
