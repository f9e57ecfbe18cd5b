"""The ledger: which upload versions a group of uploads has already normalized, and what that gave.

Each group of a day (chatetl.ingest.groups: its uploader's uploads) has its own ledger, so the
groups of one day run at the same time without losing each other's entries: it maps each upload
key to the ETag it was normalized from, the parser that read it, the outputs written (with their
ETags) and the counts (`chatetl.layout.ledger_key`; the day's file `date=D.json`, written before
groups had ledgers of their own, is the top-level group's, and seeds an uploader's that does not
exist yet).
A rerun skips an upload whose key, ETag, parser and outputs are all unchanged, so
rerunning a day is cheap; a replaced upload (new ETag), a parser upgrade or a deleted
output makes it run again.

`state/uploads/by-key/<upload-id>.json` says which day holds an upload key's outputs,
so when a replaced upload moves to a later day its outputs leave the earlier one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatetl.ingest.groups import uploader_of
from chatetl.layout import LEDGER_PREFIX, ledger_key, location_key
from chatetl.storage import ObjectStore


@lru_cache(maxsize=1)
def parser_fingerprint() -> str:
    """A digest of the code that turns an upload into normalized rows (readers, model,
    normalization): any change to it makes every upload eligible for reprocessing."""
    root = Path(__file__).resolve().parent.parent
    files = [*(path for package in ("readers", "normalize", "tables") for path in sorted((root / package).rglob("*.py"))), root / "model.py"]
    h = hashlib.sha256()
    for path in files:
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class LedgerEntry:
    key: str
    etag: str
    size: int
    upload_id: str
    parser: str
    conversations: int
    messages: int
    errors: int
    outputs: dict[str, str]  # output key -> ETag written
    sources: dict[str, int] = field(default_factory=dict)  # source -> conversations
    quarantined: int = 0
    processed_at: str = ""
    drift: dict[str, int] = field(default_factory=dict)  # what the reader found it did not know ("chatgpt.content_type:x" -> count)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LedgerEntry:
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in fields})


@dataclass
class Ledger:
    day: str
    entries: dict[str, LedgerEntry] = field(default_factory=dict)
    dirty: bool = False
    uploader: str = ""
    others: dict[str, Any] = field(default_factory=dict)  # other uploaders' entries in the day's file, kept as they are

    @classmethod
    def load(cls, store: ObjectStore, day: str, uploader: str = "") -> Ledger:
        """The ledger of the group of `day` and `uploader` (chatetl.ingest.groups)."""
        own = _read(store, ledger_key(day, uploader))
        if own is None and uploader:  # no ledger of its own yet: its entries in the day's file
            return cls(day, {k: LedgerEntry.from_dict(v) for k, v in (_read(store, ledger_key(day)) or {}).items()
                             if uploader_of(k) == uploader}, uploader=uploader)
        ledger = cls(day, uploader=uploader)
        for k, v in (own or {}).items():
            if uploader_of(k) == uploader:
                ledger.entries[k] = LedgerEntry.from_dict(v)
            else:
                ledger.others[k] = v
        return ledger

    def is_current(self, key: str, etag: str, outputs_now: dict[str, str]) -> bool:
        """Already normalized from these exact bytes by this parser, outputs still in place."""
        entry = self.entries.get(key)
        return (
            entry is not None
            and entry.etag == etag
            and entry.parser == parser_fingerprint()
            and bool(entry.outputs)
            and all(outputs_now.get(k) == e for k, e in entry.outputs.items())
        )

    def record(self, entry: LedgerEntry) -> None:
        entry.processed_at = entry.processed_at or datetime.now(UTC).isoformat(timespec="seconds")
        self.entries[entry.key] = entry
        self.dirty = True

    def drop(self, key: str) -> None:
        if self.entries.pop(key, None) is not None:
            self.dirty = True

    def to_bytes(self) -> bytes:
        uploads = {**self.others, **{k: asdict(v) for k, v in self.entries.items()}}
        doc = {"day": self.day, "uploads": dict(sorted(uploads.items()))} | ({"uploader": self.uploader} if self.uploader else {})
        return json.dumps(doc, indent=1, sort_keys=True).encode()

    def save(self, store: ObjectStore) -> None:
        if self.dirty:
            store.write_bytes(ledger_key(self.day, self.uploader), self.to_bytes(), "application/json")
            self.dirty = False


def day_uploaders(store: ObjectStore, day: str) -> set[str]:
    """The uploaders whose ledgers of `day` hold entries (those of the day's own file too)."""
    found = {uploader_of(k) for k in _read(store, ledger_key(day)) or {}}
    for info in store.list(f"{LEDGER_PREFIX}date={day}/"):
        doc = json.loads(store.get_bytes(info.key))
        if doc.get("uploads"):
            found.add(str(doc.get("uploader", "")))
    return found


def _read(store: ObjectStore, key: str) -> dict[str, Any] | None:
    if store.head(key) is None:
        return None
    uploads: dict[str, Any] = json.loads(store.get_bytes(key)).get("uploads", {})
    return uploads


def read_location(store: ObjectStore, upload_id: str) -> dict[str, str] | None:
    key = location_key(upload_id)
    if store.head(key) is None:
        return None
    try:
        location: dict[str, str] = json.loads(store.get_bytes(key))
        return location
    except ValueError:
        return None


def write_location(store: ObjectStore, upload_id: str, upload_key: str, day: str, etag: str) -> None:
    body = json.dumps({"key": upload_key, "day": day, "etag": etag}, sort_keys=True).encode()
    store.write_bytes(location_key(upload_id), body, "application/json")


def forget_location(store: ObjectStore, upload_id: str, day: str) -> None:
    """The upload was deleted and its outputs of `day` retracted: no day holds them, so its record goes (one
    pointing to another day, where the upload moved, stays)."""
    location = read_location(store, upload_id)
    if location is not None and location.get("day") == day:
        store.delete(location_key(upload_id))
