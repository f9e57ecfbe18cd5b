"""What one upload may take: how long one JSON string may be, how far its zips may inflate.

- `max_value_bytes` (CHATETL_MAX_VALUE_BYTES, 64 MiB): a JSON string longer than this makes its record
  bad, reported in its place and quarantined without its bytes, which are let go as they are scanned.
- `max_inflate_ratio` (CHATETL_MAX_INFLATE_RATIO, 100): a zip whose members declare more than this many
  times the upload's own size (past RATIO_FREE_BYTES) is refused before anything is inflated.
- `max_inflated_bytes` (CHATETL_MAX_INFLATED_BYTES, 8 GiB): no member may declare more, and the bytes
  inflated from an upload's zips are counted as they are read: past the cap reading stops.

Read from the environment (chatetl.settings) when a reader starts on an input.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from chatetl.settings import Settings

# Below this many inflated bytes the ratio is not checked: a small zip of repetitive JSON (a test
# fixture, an empty-ish export) may inflate 1,000 times and still costs nothing to read.
RATIO_FREE_BYTES = 64 * 1024**2


@dataclass(frozen=True)
class Limits:
    max_value_bytes: int = 64 * 1024**2
    max_inflated_bytes: int = 8 * 1024**3
    max_inflate_ratio: float = 100.0

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(settings.max_value_bytes, settings.max_inflated_bytes, settings.max_inflate_ratio)

    def inflate_limit(self, upload_bytes: int) -> int:
        """The bytes an upload of `upload_bytes` may declare its zips inflate to (the ratio cap)."""
        return max(int(self.max_inflate_ratio * upload_bytes), RATIO_FREE_BYTES)


_VARIABLES = ("CHATETL_MAX_VALUE_BYTES", "CHATETL_MAX_INFLATED_BYTES", "CHATETL_MAX_INFLATE_RATIO")


_GIVEN: Limits | None = None  # the limits of the process that handed this one its work (given_by)


def current() -> Limits:
    """The limits of the environment, read now (each reader asks, for each file: only these three variables are
    read, each value parsed once); in a worker reading another process's files, that process's (`given_by`)."""
    if _GIVEN is not None:
        return _GIVEN
    return _parsed(*map(os.environ.get, _VARIABLES))


@contextmanager
def given_by(limits: Limits) -> Iterator[None]:
    """`current()` is `limits` inside (a worker reads a batch of files under the limits of the process that
    queued it, whose environment it may not share: chatetl.normalize.pieces.convert_leaves)."""
    global _GIVEN
    before, _GIVEN = _GIVEN, limits
    try:
        yield
    finally:
        _GIVEN = before


@lru_cache(maxsize=16)
def _parsed(*values: str | None) -> Limits:
    return Limits.from_settings(Settings.from_env({name: v for name, v in zip(_VARIABLES, values) if v is not None}))


def size_text(n: int) -> str:
    """Bytes as a person reads them in an error: `67108864 bytes (64 MiB)`."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n} bytes ({n / size:.3g} {unit})"
    return f"{n} bytes"
