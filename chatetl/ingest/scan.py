"""The sensor's bounded scan of raw/: which uploads are new or replaced since the last tick.

The scan (`discover`) walks raw/ in key order with two StartAfter positions kept in a small
cursor: a *fast path* after the greatest key seen so far (a new key that sorts last, e.g.
dated or time-ordered names, is found on the next tick), and a *rolling re-scan* that
resumes where the last tick stopped and wraps around (it finds replaced objects and new
keys that sort in the middle). Work per tick is capped in keys and seconds; the position is
saved, so a backlog drains over several ticks. While raw/ holds fewer keys than the cap,
every tick covers all of it.

An object is a *change* when its (key, ETag, day) has not been seen: objects modified before
the previous full re-scan began were all seen then, so only recent ones are remembered
(their fingerprints ride in the cursor and are pruned as cycles complete). What it finds is
recorded in the upload index (chatetl.ingest.index). Plain Python over `ObjectStore`: the
sensor is a thin shell around it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from chatetl.ingest.index import partition_of, read_coverage
from chatetl.layout import RAW_PREFIX, is_upload
from chatetl.storage import ObjectInfo, ObjectStore

# How far the S3 server's clock (LastModified) may be from ours: objects modified this long
# before a re-scan cycle began are still re-checked by the next cycle.
CLOCK_SKEW_SECONDS = 300.0


def fingerprint(info: ObjectInfo) -> str:
    """One upload version: key, content (ETag) and day. Identical bytes re-uploaded on the
    same day are the same version; on another day they move the upload to that day."""
    raw = f"{info.key}\0{info.etag}\0{partition_of(info)}".encode()
    return hashlib.sha256(raw).hexdigest()[:20]


@dataclass
class ScanCursor:
    """Where the scan of raw/ stands; serialized as the sensor's cursor (small JSON)."""

    high: str = ""  # the greatest raw key seen: keys after it are new (fast path)
    pos: str = ""  # the rolling re-scan's StartAfter position (keys <= high)
    cycle_start: float | None = None  # when the current re-scan cycle began (epoch seconds)
    since: float | None = None  # objects modified before this were seen by an earlier cycle
    seen: dict[str, float] = field(default_factory=dict)  # fingerprint -> last_modified, for versions modified >= since
    cycles: int = 0  # completed re-scan cycles
    gone_pos: str = ""  # where the check of deleted uploads goes on (chatetl.ingest.deletions), when raw/ is too big for a tick

    def to_json(self) -> str:
        return json.dumps(
            {"v": 1, "high": self.high, "pos": self.pos, "cycle_start": self.cycle_start, "since": self.since, "seen": self.seen, "cycles": self.cycles,
             "gone_pos": self.gone_pos},
            separators=(",", ":"),
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str | None) -> ScanCursor:
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
            gone_pos=str(d.get("gone_pos", "")),
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
    every_upload: list[str] | None = None  # every upload key of raw/, when this step listed all of it


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
    c = ScanCursor(cursor.high, cursor.pos, cursor.cycle_start, cursor.since, dict(cursor.seen), cursor.cycles, cursor.gone_pos)
    whole = not c.pos  # the re-scan starts at the first key: reaching its end, this step lists all of raw/
    if c.cycle_start is None or c.since is None:
        # First step: the fast path from "" sees every existing key; the first re-scan cycle
        # only needs to look at what changes from now on (minus the clock skew allowance).
        c.cycle_start, c.since = now, now - CLOCK_SKEW_SECONDS
    step = _Step(store, c, c.since, clock, deadline=clock() + max_seconds)
    found = step.found
    step.fast_path(max_keys)
    budget = max_keys - found.listed
    if found.fast_path_drained and budget > 0:
        if step.rescan(budget):
            if whole and not found.stopped_by:
                found.every_upload = sorted(step.uploads)
            _next_cycle(c, found, c.cycle_start, now)
    elif not found.stopped_by:
        found.stopped_by = "keys"
    found.changes = sorted(step.changes.values(), key=lambda i: i.key)
    return found


class _Step:
    """One bounded step of the scan: the cursor it moves, what it finds, until when it may list."""

    def __init__(self, store: ObjectStore, cursor: ScanCursor, since: float, clock: Callable[[], float], deadline: float) -> None:
        self.store, self.cursor, self.since, self.clock, self.deadline = store, cursor, since, clock, deadline
        self.found = Discovery(changes=[], cursor=cursor)
        self.changes: dict[str, ObjectInfo] = {}
        self.uploads: set[str] = set()  # every upload key listed

    def consider(self, info: ObjectInfo) -> None:
        fp = fingerprint(info)
        if fp in self.cursor.seen:
            return
        if info.last_modified.timestamp() >= self.since:
            self.cursor.seen[fp] = info.last_modified.timestamp()
        self.changes[info.key] = info

    def out_of_time(self) -> bool:
        if self.clock() > self.deadline:
            self.found.stopped_by = "seconds"
            return True
        return False

    def fast_path(self, max_keys: int) -> None:
        """Keys after the greatest one seen."""
        c, found = self.cursor, self.found
        n = 0
        for info in self.store.list(RAW_PREFIX, start_after=c.high or None, limit=max_keys):
            n += 1
            c.high = info.key
            if is_upload(info.key):
                self.uploads.add(info.key)
                self.consider(info)
            elif not info.key.endswith("/"):
                found.ignored.append(info.key)
            if self.out_of_time():
                break
        found.listed = n
        if not found.stopped_by:
            if n < max_keys:
                found.fast_path_drained = True
            else:
                found.stopped_by = "keys"

    def rescan(self, budget: int) -> bool:
        """The rolling re-scan of keys <= high, `budget` keys at most; True when it reached
        the end of them (the cycle is complete)."""
        c, found = self.cursor, self.found
        m = 0
        reached_end = False
        for info in self.store.list(RAW_PREFIX, start_after=c.pos or None, limit=budget):
            m += 1
            if info.key > c.high:  # arrived after this step's fast path: the next step's
                reached_end = True
                break
            c.pos = info.key
            if is_upload(info.key):
                self.uploads.add(info.key)
            if is_upload(info.key) and info.last_modified.timestamp() >= self.since:
                self.consider(info)
            if self.out_of_time():
                break
        else:
            if m < budget:
                reached_end = True
            else:
                found.stopped_by = "keys"
        found.listed += m
        return reached_end


def _next_cycle(c: ScanCursor, found: Discovery, cycle_start: float, now: float) -> None:
    """Every version modified before this cycle began has now been found: the next one starts now."""
    found.cycle_completed = True
    found.coverage = cycle_start - CLOCK_SKEW_SECONDS
    c.since = cycle_start - CLOCK_SKEW_SECONDS
    c.cycle_start = now
    c.pos = ""
    c.cycles += 1
    c.seen = {fp: lm for fp, lm in c.seen.items() if lm >= c.since}


def check_cursor(store: ObjectStore, cursor: ScanCursor) -> tuple[ScanCursor, bool]:
    """A cursor that has completed cycles vouches for an index that must exist: if the
    coverage marker is gone (state/ deleted), start over so the index is rebuilt."""
    if cursor.cycles > 0 and read_coverage(store) is None:
        return ScanCursor(), True
    return cursor, False
