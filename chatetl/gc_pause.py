"""Python's cyclic garbage collector paused while many objects without cycles are built.

The collector's passes run over every object made since the last one; when a step makes millions of them
(a long record decoded and its rows made, a part of the messages table read back into the model), those
passes cost more than the work itself, and none of these objects form cycles. Measured where it is used:
one 233 MB ChatGPT conversation, `chatetl normalize` median of 2, 21.2 s with the collector on, 13.2 s
with it off (its decode alone 0.7-0.8 s off, 2.6-8.1 s on; chatetl.readers.jsonscan.splitter); the read-back of the
100k messages of a bench/graph_load.py partition, median of 5, 2.3 s on, 1.6-1.8 s off (chatetl.tables).
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
