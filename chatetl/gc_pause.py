"""Python's cyclic garbage collector paused while many objects without cycles are built.

The collector's passes run over every object made since the last one; when a step makes millions of them
(a long record decoded and its rows made, a part of the messages table read back into the model), those
passes cost more than the work itself, and none of these objects form cycles (measured where it is
used: bench/RESULTS.md).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector paused for the block, then left as the caller had it (off stays off)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


__all__ = ["gc_paused"]
