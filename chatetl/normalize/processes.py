"""How many processes normalize reads on, and the worker processes' start method.

Importing it costs nothing (no pyarrow, no readers), so a caller decides how many processes it uses
before its own imports. The pool itself (the pieces, their order, the merge) is chatetl.normalize.pool.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (one process never imports multiprocessing)
    from multiprocessing.context import ForkServerContext

AUTO_MIN_BYTES = 32 * 1024 * 1024  # smaller inputs are read in one process: the pool's start would eat its gain
MAX_AUTO_PROCESSES = 2

# what the workers' server imports once, before it forks each worker (pyarrow without numpy first: chatetl.lean_pyarrow)
PRELOAD = ["chatetl.lean_pyarrow", "chatetl.normalize.work"]


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def processes_for(workers: int | None, input_bytes: int | None) -> int:
    """Processes reading: `workers` when given (1: this one alone), else both cores for inputs of at least
    AUTO_MIN_BYTES and one for smaller ones, or ones of unknown size."""
    if workers is not None:
        return max(1, int(workers))
    if input_bytes is None or input_bytes < AUTO_MIN_BYTES:
        return 1
    return max(1, min(cores(), MAX_AUTO_PROCESSES))


def context() -> ForkServerContext:
    """The 'forkserver' start method, preloaded with PRELOAD: workers are never forked from the caller,
    which may hold threads (Dagster steps, the Parquet writer's thread); the imports are paid once, each
    worker then forks from the server in a few ms."""
    import multiprocessing  # here: one process never needs it

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


__all__ = ["AUTO_MIN_BYTES", "MAX_AUTO_PROCESSES", "PRELOAD", "context", "cores", "processes_for"]
