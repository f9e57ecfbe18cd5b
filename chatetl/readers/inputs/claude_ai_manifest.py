"""Claude.ai 2026 downloads: the `manifest-*.json` that names the zips one export is made of.

Since 2026 the "Download data" link of a claude.ai export gives a small manifest, not the export:
`manifest-<org>-<time>-<hash>-<date>.json`, naming one zip per category, each downloaded on its
own: `conversations-000.zip` (conversations.json), `projects-000.zip` (one JSON file per project),
`memories-000.zip`, `design_chats-000.zip`, `light_metadata-000.zip` (users.json). Public notes
show this shape (a sync skill's write-up of a real download, found by the code search; the part
names also in ukogan/claude-migration-assistant#4 and in the test fixtures of download helpers):

    {"total_files": 5, "data_files": [{"category": "conversations", "export_url": "https://...",
                                       "filename": "conversations-000.zip"}, ...]}

No public parser says more, so what is read here is liberal: the list under `data_files` (or
`files`, `parts`), each item's name under `filename` (or `file_name`, `name`, `path`; only its last
path part is ever used, and only to compare names), `category` (or `kind`), `size` (or
`size_bytes`) and `sha256` where given. It is strict in one thing: every item names a `.zip`, so
ChatGPT's export_manifest.json (JSON shards) or any other list of files is no Claude manifest.

A manifest holds no conversation: it is a sidecar, skipped and counted. Uploaded with its zips
(one zip holding them, or a folder), the parts it names that the upload lacks are reported by
name (chatetl.readers.inputs.archive), never as an error: every part reads on its own, and a part
uploaded alone (`conversations-000.zip`) is an ordinary Claude.ai export zip.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chatetl.readers.entry import Entry

MAX_MANIFEST_BYTES = 1024 * 1024  # a manifest of five parts is under 2 KB; a bigger "manifest" is something else
LIST_KEYS = ("data_files", "files", "parts")
NAME_KEYS = ("filename", "file_name", "name", "path")
# "conversations-000 (1).zip": the name a browser gives a second download of the same part
_DOWNLOAD_COPY = re.compile(r"\s*\(\d+\)(?=\.zip$)")


@dataclass(frozen=True)
class Part:
    """One zip a manifest names."""

    name: str  # its file name (the last part of what the manifest gives), e.g. conversations-000.zip
    category: str | None = None  # conversations, projects, memories, design_chats, light_metadata ...
    size: int | None = None
    sha256: str | None = None


def part_key(name: str) -> str:
    """A part's name as compared: its last path part, lower case, without a browser's ` (1)` copy mark."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip().lower()
    return _DOWNLOAD_COPY.sub("", base)


def parts_of(doc: Any) -> list[Part] | None:
    """The parts a decoded manifest names; None when `doc` is no manifest of zips."""
    if not isinstance(doc, dict):
        return None
    items = next((doc[k] for k in LIST_KEYS if isinstance(doc.get(k), list)), None)
    if not items:
        return None
    parts: list[Part] = []
    for item in items:
        if not isinstance(item, dict):
            return None
        name = next((item[k] for k in NAME_KEYS if isinstance(item.get(k), str) and item[k].strip()), None)
        if name is None or not part_key(name).endswith(".zip"):
            return None
        category = item.get("category", item.get("kind"))
        size = item.get("size", item.get("size_bytes"))
        sha = item.get("sha256")
        parts.append(
            Part(
                name=name.replace("\\", "/").rsplit("/", 1)[-1].strip(),
                category=category if isinstance(category, str) and category else None,
                size=size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None,
                sha256=sha if isinstance(sha, str) and sha else None,
            )
        )
    return parts


def read_parts(entry: Entry) -> list[Part] | None:
    """The parts the manifest file `entry` names (read whole, bounded); None when it is no manifest of zips."""
    try:
        with entry.open() as f:
            data = f.read(MAX_MANIFEST_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_MANIFEST_BYTES:
        return None
    try:
        return parts_of(json.loads(data.decode("utf-8-sig")))
    except (ValueError, RecursionError):
        return None


def missing_parts(parts: Iterable[Part], present: Iterable[str]) -> list[Part]:
    """The parts whose zip is not among the `present` file names (compared by `part_key`)."""
    have = {part_key(name) for name in present}
    return [p for p in parts if part_key(p.name) not in have]
