"""Finding uploads: the sensor's bounded scan of raw/, and the per-day upload index it fills.

S3 cannot list by time, and at tens of thousands of uploads listing all of raw/ on
every sensor tick (or every run) is what must not happen. So:

* The **scan** (`discover`) walks raw/ in key order with two StartAfter positions kept
  in a small cursor: a *fast path* after the greatest key seen so far (a new key that
  sorts last, e.g. dated or time-ordered names, is found on the next tick), and a
  *rolling re-scan* that resumes where the last tick stopped and wraps around (it finds
  replaced objects and new keys that sort in the middle). Work per tick is capped in
  keys and seconds; the position is saved, so a backlog drains over several ticks. While
  raw/ holds fewer keys than the cap, every tick covers all of it.
  An object is a *change* when its (key, ETag, day) has not been seen: objects modified
  before the previous full re-scan began were all seen then, so only recent ones are
  remembered (their fingerprints ride in the cursor and are pruned as cycles complete).
* The **index**: every change is recorded under `state/uploads/date=D/batch-<id>.json`
  (immutable batch files, one per day per tick), so a partition's run finds its day's
  uploads by listing its own date prefix. When a re-scan cycle completes, the scan
  publishes `state/uploads/coverage.json`: every upload modified before that instant is
  in the index. A run whose day is not covered yet (the sensor never ran, or is behind)
  lists raw/ once itself and records what it found.

Everything here is plain Python over `ObjectStore` (no Dagster): the sensor and the
assets are thin shells around it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Iterable

from chatetl.storage import ObjectInfo, ObjectStore, UnsafeKeyError, check_key

RAW_PREFIX = "raw/"
INDEX_PREFIX = "state/uploads/"
COVERAGE_KEY = f"{INDEX_PREFIX}coverage.json"
# How far the S3 server's clock (LastModified) may be from ours: objects modified this long
# before a re-scan cycle began are still re-checked by the next cycle.
CLOCK_SKEW_SECONDS = 300.0
# An upload index prefix with more batch files than this is merged into one on read.
COMPACT_AFTER = 20
# A coverage this recent means the sensor is scanning: today's index is current enough.
LIVE_SCAN_SECONDS = 3600.0


def partition_of(info: ObjectInfo) -> str:
    """Uploads belong to the day (UTC) their current version arrived in the bucket."""
    return info.last_modified.astimezone(timezone.utc).date().isoformat()


def is_upload(key: str) -> bool:
    """Keys under raw/ that are uploads: not the folder markers some S3 clients create, nor
    keys no stage may use (`..`, backslashes, ...: chatetl.storage.check_key)."""
    if not key.startswith(RAW_PREFIX) or key.endswith("/"):
        return False
    try:
        check_key(key)
    except UnsafeKeyError:
        return False
    return True


def fingerprint(info: ObjectInfo) -> str:
    """One upload version: key, content (ETag) and day. Identical bytes re-uploaded on the
    same day are the same version; on another day they move the upload to that day."""
    raw = f"{info.key}\0{info.etag}\0{partition_of(info)}".encode()
    return hashlib.sha256(raw).hexdigest()[:20]


def info_to_dict(info: ObjectInfo) -> dict:
    return {"key": info.key, "etag": info.etag, "size": info.size, "last_modified": info.last_modified.isoformat()}


def info_from_dict(d: dict) -> ObjectInfo:
    return ObjectInfo(key=d["key"], etag=d["etag"], size=int(d["size"]), last_modified=datetime.fromisoformat(d["last_modified"]))


# ---------------------------------------------------------------- the scan (sensor)


@dataclass
class ScanCursor:
    """Where the scan of raw/ stands; serialized as the sensor's cursor (small JSON)."""

    high: str = ""  # the greatest raw key seen: keys after it are new (fast path)
    pos: str = ""  # the rolling re-scan's StartAfter position (keys <= high)
    cycle_start: float | None = None  # when the current re-scan cycle began (epoch seconds)
    since: float | None = None  # objects modified before this were seen by an earlier cycle
    seen: dict[str, float] = field(default_factory=dict)  # fingerprint -> last_modified, for versions modified >= since
    cycles: int = 0  # completed re-scan cycles

    def to_json(self) -> str:
        return json.dumps(
            {"v": 1, "high": self.high, "pos": self.pos, "cycle_start": self.cycle_start, "since": self.since, "seen": self.seen, "cycles": self.cycles},
            separators=(",", ":"),
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str | None) -> "ScanCursor":
        if not text:
            return cls()
        try:
            d = json.loads(text)
        except ValueError:
            return cls()  # an unreadable (e.g. hand-edited) cursor restarts the scan: runs stay idempotent
        if not isinstance(d, dict) or d.get("v") != 1:
            return cls()
        return cls(
            high=d.get("high", ""),
            pos=d.get("pos", ""),
            cycle_start=d.get("cycle_start"),
            since=d.get("since"),
            seen=dict(d.get("seen", {})),
            cycles=int(d.get("cycles", 0)),
        )


@dataclass
class Discovery:
    """What one bounded scan step found."""

    changes: list[ObjectInfo]
    cursor: ScanCursor
    listed: int = 0  # keys listed this step (fast path + re-scan)
    fast_path_drained: bool = False  # reached the end of raw/ after `high`
    cycle_completed: bool = False
    coverage: float | None = None  # set when a cycle completed: every version modified before it is found
    stopped_by: str = ""  # "keys" or "seconds" when a cap ended the step early
    ignored: list[str] = field(default_factory=list)  # new keys under raw/ that cannot be uploads


def discover(
    store: ObjectStore,
    cursor: ScanCursor,
    *,
    now: float,
    max_keys: int = 5000,
    max_seconds: float = 15.0,
    clock: Callable[[], float] = time.monotonic,
) -> Discovery:
    """One bounded step of the scan: new keys after `high` first, then the rolling re-scan.

    Returns the changed uploads (each version exactly once across steps) and the next cursor.
    """
    c = ScanCursor(cursor.high, cursor.pos, cursor.cycle_start, cursor.since, dict(cursor.seen), cursor.cycles)
    if c.cycle_start is None or c.since is None:
        # First step: the fast path from "" sees every existing key; the first re-scan cycle
        # only needs to look at what changes from now on (minus the clock skew allowance).
        c.cycle_start, c.since = now, now - CLOCK_SKEW_SECONDS
    deadline = clock() + max_seconds
    found = Discovery(changes=[], cursor=c)
    changes: dict[str, ObjectInfo] = {}

    def consider(info: ObjectInfo) -> None:
        fp = fingerprint(info)
        if fp in c.seen:
            return
        if info.last_modified.timestamp() >= c.since:  # type: ignore[operator]
            c.seen[fp] = info.last_modified.timestamp()
        changes[info.key] = info

    # 1. the fast path: keys after the greatest one seen
    n = 0
    for info in store.list(RAW_PREFIX, start_after=c.high or None, limit=max_keys):
        n += 1
        c.high = info.key
        if is_upload(info.key):
            consider(info)
        elif not info.key.endswith("/"):
            found.ignored.append(info.key)
        if clock() > deadline:
            found.stopped_by = "seconds"
            break
    found.listed = n
    if not found.stopped_by:
        if n < max_keys:
            found.fast_path_drained = True
        else:
            found.stopped_by = "keys"

    # 2. the rolling re-scan of keys <= high, with what is left of the budget
    budget = max_keys - found.listed
    if found.fast_path_drained and budget > 0:
        m = 0
        reached_end = False
        for info in store.list(RAW_PREFIX, start_after=c.pos or None, limit=budget):
            m += 1
            if info.key > c.high:  # arrived after this step's fast path: the next step's
                reached_end = True
                break
            c.pos = info.key
            if is_upload(info.key) and info.last_modified.timestamp() >= c.since:  # type: ignore[operator]
                consider(info)
            if clock() > deadline:
                found.stopped_by = "seconds"
                break
        else:
            if m < budget:
                reached_end = True
            else:
                found.stopped_by = "keys"
        found.listed += m
        if reached_end:
            # Every version modified before this cycle began has now been found.
            found.cycle_completed = True
            found.coverage = c.cycle_start - CLOCK_SKEW_SECONDS  # type: ignore[operator]
            c.since = c.cycle_start - CLOCK_SKEW_SECONDS  # type: ignore[operator]
            c.cycle_start = now
            c.pos = ""
            c.cycles += 1
            c.seen = {fp: lm for fp, lm in c.seen.items() if lm >= c.since}
    elif not found.stopped_by:
        found.stopped_by = "keys"

    found.changes = sorted(changes.values(), key=lambda i: i.key)
    return found


def check_cursor(store: ObjectStore, cursor: ScanCursor) -> tuple[ScanCursor, bool]:
    """A cursor that has completed cycles vouches for an index that must exist: if the
    coverage marker is gone (state/ deleted), start over so the index is rebuilt."""
    if cursor.cycles > 0 and read_coverage(store) is None:
        return ScanCursor(), True
    return cursor, False


# ---------------------------------------------------------------- the index


def index_prefix(day: str) -> str:
    return f"{INDEX_PREFIX}date={day}/"


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


def _parallel(fn: Callable, items: list, threads: int = 8) -> list:
    if len(items) <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(fn, items))


def record_batches(store: ObjectStore, batches: list[UploadBatch]) -> None:
    """Write each batch's index file (immutable, named by content: writing twice is harmless)."""
    _parallel(lambda b: store.put_bytes(b.index_key, b.to_bytes(), "application/json"), batches)


def publish_coverage(store: ObjectStore, complete_before: float) -> None:
    """Every upload modified before `complete_before` is in the index (never moves backwards)."""
    old = read_coverage(store)
    if old is not None and old >= complete_before:
        return
    body = {"complete_before": datetime.fromtimestamp(complete_before, tz=timezone.utc).isoformat()}
    store.put_bytes(COVERAGE_KEY, json.dumps(body).encode(), "application/json")


def read_coverage(store: ObjectStore) -> float | None:
    if store.head(COVERAGE_KEY) is None:
        return None
    try:
        return datetime.fromisoformat(json.loads(store.get_bytes(COVERAGE_KEY))["complete_before"]).timestamp()
    except (ValueError, KeyError, TypeError):
        return None


def day_start(day: str) -> float:
    return datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()


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
    files = [o.key for o in store.list(index_prefix(day)) if o.key.endswith(".json")]
    docs = _parallel(lambda k: json.loads(store.get_bytes(k)), files)
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
        store.put_bytes(merged.index_key, merged.to_bytes(), "application/json")
        for key in files:
            if key != merged.index_key:
                store.delete(key)
    return uploads


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
            f"is complete only for uploads before {datetime.fromtimestamp(coverage, tz=timezone.utc).isoformat(timespec='seconds')}"
            if coverage
            else "has not completed a scan yet"
        )
        note.append(f"listed raw/ ({listed} objects) for {', '.join(uncovered)}: the upload index {when} (is upload_sensor running?)")
    for d in covered:
        indexed = [u.key for u in indexed_uploads(store, d)]
        day = DayUploads(d, [], "index")
        for key, info in sorted(current_state(store, indexed).items()):
            if info is None:
                day.gone.append(key)
            elif partition_of(info) == d:
                day.uploads.append(info)
            else:
                day.moved[key] = partition_of(info)
        result[d] = day
    if covered:
        note.append(f"read the upload index for {', '.join(covered)}")
    return result, "; ".join(note)
