"""Uploads deleted from raw/ whose outputs a day still holds: what the sensor turns into a run of their group.

Every normalized upload has a location record (state/uploads/by-key/<upload-id>.json: its key, day and
ETag, chatetl.ingest.ledger). An upload is gone when its raw/ key no longer exists while the ledger of
its day still holds it; a run of that day retracts it (chatetl.ingest.partition, chatetl.retractions)
and removes the record, so a deletion is found once.
When the sensor's scan listed all of raw/ in its tick, every record is checked against that listing
(a record is read only when its key was not listed); otherwise a bounded page of records a tick is
read and its keys asked for, the position kept in the scan's cursor, so every record comes round.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from chatetl.ingest.groups import UploadGroup, uploader_of
from chatetl.ingest.index import current_state
from chatetl.ingest.ledger import Ledger, read_location
from chatetl.layout import LOCATION_PREFIX, upload_id
from chatetl.storage import ObjectStore

PAGE = 200  # location records checked a tick when raw/ is too big to be listed in one


@dataclass(frozen=True)
class GoneUpload:
    key: str
    day: str  # the day holding its outputs
    etag: str  # its last version's

    @property
    def group(self) -> UploadGroup:
        """The group whose run retracts it."""
        return UploadGroup(self.day, uploader_of(self.key))

    @property
    def run_key(self) -> str:
        """One run request per deleted version: the same deletion seen by later ticks is not run twice."""
        return f"deleted:{self.key}@{self.etag}@date={self.day}"


def gone_uploads(store: ObjectStore, every_upload: Iterable[str] | None, pos: str = "", page: int = PAGE) -> tuple[list[GoneUpload], str]:
    """The uploads deleted from raw/ whose day still holds them, and the next position of the paged check.

    `every_upload`: every key of raw/, when the caller listed all of it just now (every record is checked);
    None: `page` records after `pos` are (the returned position wraps to "" at the end)."""
    if every_upload is not None:
        present = {upload_id(k) for k in every_upload}
        ids = [uid for uid in _record_ids(store, "", None) if uid not in present]
        next_pos = pos
    else:
        ids = _record_ids(store, pos, page)
        next_pos = "" if len(ids) < page else ids[-1]
    records = [r for r in (read_location(store, uid) for uid in ids) if r and r.get("key") and r.get("day")]
    now = current_state(store, [r["key"] for r in records])
    ledgers: dict[UploadGroup, Ledger] = {}
    gone = []
    for r in records:
        if now[r["key"]] is not None:
            continue  # there again (or uploaded after the listing)
        group = UploadGroup(r["day"], uploader_of(r["key"]))
        ledger = ledgers.get(group) or ledgers.setdefault(group, Ledger.load(store, group.day, group.uploader))
        if r["key"] in ledger.entries:  # (not there: retracted already, or moved on to another day)
            gone.append(GoneUpload(r["key"], r["day"], r.get("etag", "")))
    return sorted(gone, key=lambda g: (g.day, g.key)), next_pos


def _record_ids(store: ObjectStore, pos: str, limit: int | None) -> list[str]:
    start = f"{LOCATION_PREFIX}{pos}.json" if pos else None
    return [o.key[len(LOCATION_PREFIX):].removesuffix(".json")
            for o in store.list(LOCATION_PREFIX, start_after=start, limit=limit) if o.key.endswith(".json")]
