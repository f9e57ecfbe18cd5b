"""The upload index: which uploads each day holds, without listing all of raw/ per run.

S3 cannot list by time, and at tens of thousands of uploads listing all of raw/ on every
run is what must not happen. Every change the sensor's scan (chatetl.ingest.scan) finds
is recorded under `state/uploads/date=D/batch-<id>.json` (immutable batch files, one per
day per tick), so a partition's run finds its day's uploads by listing its own date
prefix. When a re-scan cycle completes, the scan publishes `state/uploads/coverage.json`:
every upload modified before that instant is in the index. A run whose day is not covered
yet (the sensor never ran, or is behind) lists raw/ once itself and records what it found.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from chatetl.layout import COVERAGE_KEY, RAW_PREFIX, index_prefix, is_upload
from chatetl.storage import ObjectInfo, ObjectStore

# An upload index prefix with more batch files than this is merged into one on read.
COMPACT_AFTER = 20
# A coverage this recent means the sensor is scanning: today's index is current enough.
LIVE_SCAN_SECONDS = 3600.0


def partition_of(info: ObjectInfo) -> str:
    """Uploads belong to the day (UTC) their current version arrived in the bucket."""
    return info.last_modified.astimezone(UTC).date().isoformat()


def info_to_dict(info: ObjectInfo) -> dict[str, Any]:
    return {"key": info.key, "etag": info.etag, "size": info.size, "last_modified": info.last_modified.isoformat()}


def info_from_dict(d: dict[str, Any]) -> ObjectInfo:
    return ObjectInfo(key=d["key"], etag=d["etag"], size=int(d["size"]), last_modified=datetime.fromisoformat(d["last_modified"]))


@dataclass(frozen=True)
class UploadBatch:
    """Uploads of one day found together: one index file, one run request."""

    day: str
    uploads: tuple[ObjectInfo, ...]

    @property
    def digest(self) -> str:
        raw = "\n".join(sorted(f"{u.key}@{u.etag}" for u in self.uploads)).encode()
        return hashlib.sha256(raw).hexdigest()[:24]

    @property
    def index_key(self) -> str:
        return f"{index_prefix(self.day)}batch-{self.digest}.json"

    @property
    def run_key(self) -> str:
        """Honest run keys: one upload version is `key@etag`; a batch names its day and the
        digest of its key@etag list (each version is in exactly one batch)."""
        if len(self.uploads) == 1:
            u = self.uploads[0]
            return f"{u.key}@{u.etag}"
        return f"date={self.day}:{len(self.uploads)}-uploads:{self.digest}"

    def to_bytes(self) -> bytes:
        body = {"day": self.day, "uploads": [info_to_dict(u) for u in sorted(self.uploads, key=lambda u: u.key)]}
        return json.dumps(body, indent=1, sort_keys=True).encode()


def batches_by_day(changes: Iterable[ObjectInfo]) -> list[UploadBatch]:
    days: dict[str, list[ObjectInfo]] = defaultdict(list)
    for info in changes:
        days[partition_of(info)].append(info)
    return [UploadBatch(day, tuple(sorted(v, key=lambda u: u.key))) for day, v in sorted(days.items())]


T = TypeVar("T")
R = TypeVar("R")


def _parallel(fn: Callable[[T], R], items: list[T], threads: int = 8) -> list[R]:
    if len(items) <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(fn, items))


def record_batches(store: ObjectStore, batches: list[UploadBatch]) -> None:
    """Write each batch's index file (immutable, named by content: writing twice is harmless)."""
    _parallel(lambda b: store.write_bytes(b.index_key, b.to_bytes(), "application/json"), batches)


def publish_coverage(store: ObjectStore, complete_before: float) -> None:
    """Every upload modified before `complete_before` is in the index (never moves backwards)."""
    old = read_coverage(store)
    if old is not None and old >= complete_before:
        return
    body = {"complete_before": datetime.fromtimestamp(complete_before, tz=UTC).isoformat()}
    store.write_bytes(COVERAGE_KEY, json.dumps(body).encode(), "application/json")


def read_coverage(store: ObjectStore) -> float | None:
    if store.head(COVERAGE_KEY) is None:
        return None
    try:
        return datetime.fromisoformat(json.loads(store.get_bytes(COVERAGE_KEY))["complete_before"]).timestamp()
    except (ValueError, KeyError, TypeError):
        return None


def day_start(day: str) -> float:
    return datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()


def day_end(day: str) -> float:
    return day_start(day) + 86400.0


def day_is_covered(day: str, coverage: float | None) -> bool:
    """The index holds every upload of the day (a full scan began after the day ended)."""
    return coverage is not None and coverage >= day_end(day)


def index_serves(day: str, coverage: float | None, now: float) -> bool:
    """A run of `day` can rely on the index: the day is covered, or the scan is inside it and
    alive (coverage recent), so what the index lacks yet will start its own run when found."""
    if coverage is None:
        return False
    return coverage >= day_end(day) or (coverage >= day_start(day) and now - coverage <= LIVE_SCAN_SECONDS)


def indexed_uploads(store: ObjectStore, day: str, compact: bool = True) -> list[ObjectInfo]:
    """The uploads the index holds for a day: the latest version per key.

    Reads the day's batch files; when there are many, writes one merged file first and
    then deletes exactly the files it merged (a batch written meanwhile is never lost).
    """
    files, docs = _batch_files(store, day)
    latest: dict[str, ObjectInfo] = {}
    for doc in docs:
        for d in doc.get("uploads", []):
            info = info_from_dict(d)
            old = latest.get(info.key)
            if old is None or (info.last_modified, info.etag) > (old.last_modified, old.etag):
                latest[info.key] = info
    uploads = sorted(latest.values(), key=lambda u: u.key)
    if compact and len(files) > COMPACT_AFTER:
        merged = UploadBatch(day, tuple(uploads))
        store.write_bytes(merged.index_key, merged.to_bytes(), "application/json")
        for key in files:
            if key != merged.index_key:
                store.delete(key)
    return uploads


def _batch_files(store: ObjectStore, day: str, attempts: int = 5) -> tuple[list[str], list[dict[str, Any]]]:
    """The day's batch files and their contents. Runs of one day's groups may compact at the same time:
    a file merged away meanwhile is in a merged file written before it went, which a new listing holds."""
    for _ in range(attempts):
        files = [o.key for o in store.list(index_prefix(day)) if o.key.endswith(".json")]
        docs = _parallel(lambda k: _json_unless_gone(store, k), files)
        if all(d is not None for d in docs):
            return files, [d for d in docs if d is not None]
    raise RuntimeError(f"the upload index of {day} kept changing while it was read ({index_prefix(day)})")


def _json_unless_gone(store: ObjectStore, key: str) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = json.loads(store.get_bytes(key))
        return doc
    except Exception:
        if store.head(key) is None:
            return None
        raise


@dataclass
class DayUploads:
    """A partition's uploads as they are now, and how they were found."""

    day: str
    uploads: list[ObjectInfo]
    how: str  # "index" or "listing"
    moved: dict[str, str] = field(default_factory=dict)  # indexed here, but its current version belongs to another day
    gone: list[str] = field(default_factory=list)  # indexed here, no longer in the bucket


def current_state(store: ObjectStore, keys: list[str]) -> dict[str, ObjectInfo | None]:
    """HEAD each key (in parallel): the current version, or None when it is gone."""
    return dict(zip(keys, _parallel(store.head, keys, threads=16)))


def find_uploads(store: ObjectStore, days: list[str], now: float | None = None) -> tuple[dict[str, DayUploads], str]:
    """Every upload of each day, current as of now; and a note on how they were found.

    Days the index serves (see `index_serves`) read only their own index prefix (and HEAD
    their uploads, which may have been replaced or deleted since); the other days share
    one listing of raw/, whose findings are recorded in the index.
    """
    coverage = read_coverage(store)
    now = time.time() if now is None else now
    covered = [d for d in days if index_serves(d, coverage, now)]
    uncovered = [d for d in days if d not in covered]
    result: dict[str, DayUploads] = {}
    note = []
    if uncovered:
        per_day: dict[str, list[ObjectInfo]] = {d: [] for d in uncovered}
        listed = 0
        for info in store.list(RAW_PREFIX):
            listed += 1
            if is_upload(info.key) and partition_of(info) in per_day:
                per_day[partition_of(info)].append(info)
        record_batches(store, [UploadBatch(d, tuple(v)) for d, v in per_day.items() if v])
        for d in uncovered:
            result[d] = DayUploads(d, per_day[d], "listing")
        when = (
            f"is complete only for uploads before {datetime.fromtimestamp(coverage, tz=UTC).isoformat(timespec='seconds')}"
            if coverage
            else "has not completed a scan yet"
        )
        note.append(f"listed raw/ ({listed} objects) for {', '.join(uncovered)}: the upload index {when} (is upload_sensor running?)")
    for d in covered:
        indexed = [u.key for u in indexed_uploads(store, d)]
        day = DayUploads(d, [], "index")
        for key, current in sorted(current_state(store, indexed).items()):
            if current is None:
                day.gone.append(key)
            elif partition_of(current) == d:
                day.uploads.append(current)
            else:
                day.moved[key] = partition_of(current)
        result[d] = day
    if covered:
        note.append(f"read the upload index for {', '.join(covered)}")
    return result, "; ".join(note)
