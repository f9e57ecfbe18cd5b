"""How many processes normalize converts records on, and the forkserver their workers fork from.

This module imports nothing heavy (no pyarrow, no pydantic, not the readers), so the command line
decides how many processes it uses and starts their forkserver before its own imports
(`start_forkserver`): the forkserver imports chatetl's readers and pyarrow on the other core while
this process imports the same, and the first worker is ready when the first records are cut.
The pool itself (the tasks, the order, the merge) is chatetl.normalize.pool.
"""

from __future__ import annotations

import os
from typing import Any

AUTO_MIN_BYTES = 32 * 1024 * 1024  # smaller inputs read in one process (a pool costs 0.3-1.5 s to start)
MAX_AUTO_WORKERS = 2

# Whether `workers=None` may choose the pool (`--workers 1`, or workers=1, never does): on since
# bench/normalize_throughput.py showed it winning on every input of at least AUTO_MIN_BYTES on the shared
# 2-core machine (200 MB: ChatGPT 1.52x one process, Claude.ai 1.34x, sharded zip 1.32x; on 3 December
# 1.14x, 1.11x, 1.16x, and 1 GB 1.22x). At 20 MB, under AUTO_MIN_BYTES, the pool's start ate its gain
# (1.00x, 0.80x on 2 December; on 3 December, with the forkserver started before the command's imports,
# 8 alternating pairs: median 1.045 s one process, 1.027 s two, 1.02x), and at 50 MB two cores gained
# 1.17x (6 pairs: 1.785 vs 1.528 s).
AUTO = True

# what the forkserver imports once, before it forks each worker (pyarrow without numpy first: see the module)
PRELOAD = ["chatetl.normalize.lean_pyarrow", "chatetl.normalize.pool"]


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def resolve_workers(workers: int | None, input_bytes: int | None) -> int:
    """Processes converting records: `workers` when given (1: the one-process path), else automatic:
    with AUTO on, both cores for an input of at least AUTO_MIN_BYTES, else 1 (an input of unknown
    size too: the pool's start would outweigh a small one)."""
    if workers is not None:
        return max(1, int(workers))
    if not AUTO or input_bytes is None or input_bytes < AUTO_MIN_BYTES:
        return 1
    return max(1, min(cores(), MAX_AUTO_WORKERS))


def context() -> Any:
    """The 'forkserver' start method, preloaded with PRELOAD: workers are never forked from the
    caller, which may hold threads (Dagster steps, the Parquet writer thread); the imports are paid
    once, each worker then forks from the server in a few ms."""
    import multiprocessing  # here: the one-process path never needs it (~20 ms of start-up)

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def start_forkserver() -> None:
    """Start the forkserver now, without waiting for its imports (the pool, when it comes, uses the
    one already running; it stops when this process does). The first worker is ready ~0.1 s after
    reading starts instead of ~0.33 s; on the 200 MB ChatGPT-shaped file (two workers) the wall
    time gain is within the shared machine's noise (10 alternating pairs: median 2.84 vs 3.03 s,
    an earlier 7 pairs 3.10 vs 2.86 s)."""
    context()
    from multiprocessing import forkserver

    forkserver.ensure_running()


__all__ = ["AUTO", "AUTO_MIN_BYTES", "MAX_AUTO_WORKERS", "PRELOAD", "context", "cores", "resolve_workers", "start_forkserver"]
