"""Progress inside one long loop (a large upload's conversations): the items pass through unchanged,
and a line goes to the progress callback now and then, so a long step never stays silent."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

EVERY_SECONDS = 10.0  # at most one line this often: a large upload says how far it got, a small one says nothing extra


def heartbeat(items: Iterable[T], progress: Callable[[str], None] | None, what: str, every_seconds: float = EVERY_SECONDS,
              clock: Callable[[], float] = time.monotonic) -> Iterator[T]:
    """`items` as they come; while they come, `<what>: <n> so far` to `progress` once `every_seconds` have
    passed since the start or the last line (the caller's own line says when the loop is done)."""
    if progress is None:
        yield from items
        return
    last = clock()
    for n, item in enumerate(items, start=1):
        yield item
        now = clock()
        if now - last >= every_seconds:
            progress(f"{what}: {n} so far")
            last = now
