"""Attachments no upload refers to leave the bucket; a file an upload's record names stays.

What an upload's record (chatetl.attachments.refs) stops naming, because the upload left (deleted, moved)
or its new version holds fewer files, is written down (`state/attachments/let-go/`); `sweep` deletes each
such file (with its exported copies) and by-content record that no upload's record names. A run resolving
an upload's files announces itself (`resolving`, `state/attachments/in-flight/`) until its record is
written: while one is in flight, a file younger than the grace period stays (it may be that run's, not yet
in its record) and waits for a later sweep. A sweep announces itself too (`state/attachments/sweeping/`,
and a new id in `state/attachments/swept.json`): a run that a sweep may have overlapped checks its files
once its record is written and stores the missing ones again (`Resolving.files_may_be_gone`). What stays
open: a sweep's deletion landing after that check (see there). Records older than the grace period are of
runs or sweeps that died. Sweeping twice is harmless; an upload replayed after its deletion stores its
files again.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from chatetl.attachments.refs import Refs, hold, named_among
from chatetl.layout import (
    ATTACHMENTS_IN_FLIGHT_PREFIX,
    ATTACHMENTS_LET_GO_PREFIX,
    ATTACHMENTS_SWEEPING_PREFIX,
    ATTACHMENTS_SWEPT_KEY,
    attachment_key,
    attachments_in_flight_key,
    attachments_let_go_key,
    attachments_of_content_key,
    attachments_sweeping_key,
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


@dataclass(frozen=True)
class Resolving:
    """An ingest resolving an upload's files: its in-flight record, and what it saw of sweeps as it began."""

    store: ObjectStore
    key: str  # its in-flight record
    stamp: str | None  # the ETag of `swept.json` as it began ("": none yet); None: a sweep was under way

    def files_may_be_gone(self) -> bool:
        """Whether a sweep may have deleted a file this run found or stored; asked once the upload's record
        names them (one GET), so that only then are they checked one by one.

        A sweep renews `swept.json` (a unique body, so a new ETag) before it reads the upload records, and its
        `sweeping/` record, written before that, goes after its last deletion. A sweep that takes a file of
        this run after the run looked it up read the records before the run's was written (else it would
        have spared the file), so it renewed the stamp before now: after this run read it (the ETag differs
        now), or before, and then it was still under way as the run began (its `sweeping/` record listed,
        `stamp` None). A sweep that died leaves its `sweeping/` record: runs check until it is older than the
        grace period. Not covered: a sweep under way while the files are checked may delete one after its
        check; the bucket then lacks it until the upload is read again (its next version, a reprocess run
        of its day) or another upload holding the file is: either stores it again."""
        return self.stamp is None or _stamp(self.store) != self.stamp


@contextmanager
def resolving(store: ObjectStore, uid: str) -> Iterator[Resolving]:
    """While an ingest resolves upload `uid`'s files: its in-flight record, removed after."""
    key = attachments_in_flight_key(uid, uuid.uuid4().hex[:12])
    began = store.put_bytes(key, b"{}", "application/json").last_modified
    try:
        stamp = _stamp(store)  # (read before the listing: a sweep that renews it after is seen by its ETag)
        under_way = any(i.last_modified > began - GRACE for i in store.list(ATTACHMENTS_SWEEPING_PREFIX))
        yield Resolving(store, key, None if under_way else stamp)
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
    with _under_way(store) as (mine, now):
        young = now - grace
        _live(store, ATTACHMENTS_SWEEPING_PREFIX, young, mine)
        busy = _live(store, ATTACHMENTS_IN_FLIGHT_PREFIX, young, run)
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


@contextmanager
def _under_way(store: ObjectStore) -> Iterator[tuple[str, datetime]]:
    """While a sweep may delete: its `sweeping/` record (the key), removed after, and the store's own time as
    it renewed `swept.json` (so the grace never depends on this machine's clock); both before it reads the
    upload records (Resolving.files_may_be_gone)."""
    sweep_id = uuid.uuid4().hex
    key = attachments_sweeping_key(sweep_id)
    store.write_bytes(key, b"{}", "application/json")
    try:
        yield key, store.put_bytes(ATTACHMENTS_SWEPT_KEY, sweep_id.encode(), "text/plain").last_modified
    finally:
        store.delete(key)


def _stamp(store: ObjectStore) -> str:
    """The ETag of `swept.json` ("": no sweep ever deleted)."""
    fetched = store.fetch(ATTACHMENTS_SWEPT_KEY)
    return "" if fetched is None else fetched[1]


def _live(store: ObjectStore, prefix: str, young: datetime, own: str | None) -> bool:
    """Whether a run (or sweep) other than `own` is under way, by its record under `prefix`; the records of
    those that died (older than `young`) go."""
    busy = False
    for info in [i for i in store.list(prefix) if i.key != own]:
        if info.last_modified <= young:
            store.delete(info.key)
        else:
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
