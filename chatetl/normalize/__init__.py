"""Normalize: inputs into the normalized tables, on one process or on every core, through one door.

`normalize_into(writer, inputs, report, workers)` alone decides how the inputs are read: how many
processes (`processes`), which zips from a server are copied to local disk first (`sources`), and how
each chat file is read. An account export's array file (`door.CUT_FORMATS`: each record converted on
its own, by its reader's converter) is read in pieces: a local file in byte ranges (`pieces`), a zip
member whole, a stream cut into records by this process (`stream`); small members of a zip on local
disk are read in groups by their readers; anything else is read here, in its place. Each piece is read
by whichever process is free (`work`) and merged in order (`pool`), so the tables and the report are
the one-process path's, whatever the processes. The platform readers know nothing of this.

Importing this package costs nothing: the door's body (`door`) is imported when it is first asked
for, so a command can decide its processes and start their server (`processes`) before its imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatetl.normalize.door import normalize_into
    from chatetl.normalize.pool import Shares, Tuning

_LAZY = {"normalize_into": "chatetl.normalize.door", "Shares": "chatetl.normalize.pool", "Tuning": "chatetl.normalize.pool"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Shares", "Tuning", "normalize_into"]
