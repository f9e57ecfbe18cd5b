"""A digest of some of the library's own source: a stored output names the code that made it, and is stale once that code changes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path


def code_fingerprint(names: Iterable[str]) -> str:
    """The digest of `chatetl/<name>` for each name (a module, or a package with every file in it but bytecode)."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in names:
        path = root / name
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix != ".pyc") if path.is_dir() else [path]
        for file in files:
            h.update(file.relative_to(root).as_posix().encode() + b"\0")
            h.update(file.read_bytes())
    return h.hexdigest()[:16]
