"""How many processes normalize reads on, and the workers' server: its start method, started early.

Importing it costs nothing (no pyarrow, no readers): a command decides how many processes it uses
and starts their server (`start_server`) before its own imports, which the server's then run beside;
the pool's workers fork from it when it comes. The pool itself is chatetl.normalize.pool.
"""

from __future__ import annotations

import os
from pathlib import Path
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


def path_bytes(path: str | os.PathLike[str]) -> int:
    """What a local file or folder holds (0 for a path that is neither)."""
    p = Path(path)
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return p.stat().st_size if p.exists() else 0


def context() -> ForkServerContext:
    """The 'forkserver' start method, preloaded with PRELOAD: workers are never forked from the caller,
    which may hold threads (Dagster steps, the Parquet writer's thread); the imports are paid once, each
    worker then forks from the server in a few ms."""
    import multiprocessing  # here: one process never needs it

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def start_server() -> None:
    """Start the workers' server now, without waiting for its imports (a pool, when it comes, forks its
    workers from the one running; it stops with this process): its first worker is ready about when the
    caller's own imports are done, not a server's imports later."""
    context()
    from multiprocessing import forkserver

    forkserver.ensure_running()


__all__ = ["AUTO_MIN_BYTES", "MAX_AUTO_PROCESSES", "PRELOAD", "context", "cores", "path_bytes", "processes_for", "start_server"]
