"""Two independent calls run at the same time, with the outcome of running them one after the other.

Search asks the full-text and the vector index for its two lists; each waits on Neo4j, so run together
a search takes the longer of the two instead of their sum. The first call runs in a thread of its own
(a pool made for the call: nothing outlives it, and a forked process inherits no pool whose threads
are gone); the caller's thread runs the second.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

A = TypeVar("A")
B = TypeVar("B")


def side_by_side(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """(first(), second()), both run at once. As if run in that order: when `first` raises, its
    exception is raised (whatever `second` did); else `second`'s, if it raised. Returns when both
    have ended, so neither is left running behind the caller."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chatetl-side-by-side") as pool:
        future = pool.submit(first)
        try:
            second_result = second()
        except BaseException:
            future.result()  # first's exception wins, as it would have come first
            raise
        return future.result(), second_result


__all__ = ["side_by_side"]
