"""Which member of an upload holds an attachment's bytes, by each platform's layout.

A name an export's JSON gives is only ever looked up among the upload's own members
(chatetl.readers.inputs.members), never joined into a path. ChatGPT: the file id (a pointer without
its `file-service://` / `sediment://` scheme, or a bare id) names `<id>.dat` (2026 exports, the original
name in `conversation_asset_file_names.json`) or a file whose name starts with the id (`<id>-<name>`,
`<id>.<ext>`, `dalle-generations/<id>-<uuid>.webp`), the shortest such name first. Gemini: the name, in
the activity file's own folder. Grok: `prod-mc-asset-server/<id>/content`. Le Chat: the member its
pointer names (exact, then whatever the case). Claude.ai exports hold no files.
"""

from __future__ import annotations

import bisect
import html
import json
import re
from typing import Any

from chatetl.model import Attachment, Conversation, Source
from chatetl.readers.inputs.members import Members

ASSET_NAMES = "conversation_asset_file_names.json"
_MAX_ASSET_NAMES_BYTES = 64 * 1024**2
_GROK_ASSET = re.compile(r"(?:^|/)prod-mc-asset-server/+([^/]+)/content$")
_CHATGPT_SCHEMES = ("file-service://", "sediment://")


class Finder:
    """An upload's members indexed once for every attachment of its chats."""

    def __init__(self, members: Members) -> None:
        self.members = members
        self._bases = sorted((name.rsplit("/", 1)[-1], name) for name in members.by_name)
        self._base_names = [base for base, _ in self._bases]
        self._lower = {name.lower(): name for name in members.by_name}
        self._grok = {m.group(1): name for name in members.by_name if (m := _GROK_ASSET.search(name))}
        self._asset_names = _asset_names(members)

    def find(self, conv: Conversation, att: Attachment, source_file: str | None = None) -> tuple[str, str | None] | None:
        """The member holding `att`'s bytes and the original name the export gives it, or None (`source_file`:
        `upload!member`, the chat file `conv` came from, default its own)."""
        if conv.source is Source.CHATGPT:
            return self._chatgpt(att)
        if conv.source is Source.GEMINI and att.pointer:
            return self._beside(source_file or conv.source_file, html.unescape(att.pointer))
        if conv.source is Source.GROK:
            return self._grok_asset(att)
        if conv.source is Source.LE_CHAT and att.pointer:
            name = att.pointer if att.pointer in self.members.by_name else self._lower.get(att.pointer.lower())
            return (name, None) if name else None
        return None

    def _chatgpt(self, att: Attachment) -> tuple[str, str | None] | None:
        file_id = att.id
        if att.pointer and att.pointer.startswith(_CHATGPT_SCHEMES):
            file_id = att.pointer.split("://", 1)[1] or file_id
        if not file_id or "/" in file_id or "\\" in file_id:
            return None
        dat = f"{file_id}.dat"
        for name in self._named(dat):
            original = self._asset_names.get(dat)
            return name, original.rsplit("/", 1)[-1] if original else None
        best = None
        i = bisect.bisect_left(self._base_names, file_id)
        while i < len(self._bases) and self._base_names[i].startswith(file_id):
            base, name = self._bases[i]
            whole_id = len(base) == len(file_id) or base[len(file_id)] in "-."
            if whole_id and (best is None or (len(base), name) < (len(best[0]), best[1])):
                best = (base, name)
            i += 1
        return (best[1], None) if best else None

    def _named(self, base: str) -> list[str]:
        i = bisect.bisect_left(self._base_names, base)
        out = []
        while i < len(self._bases) and self._base_names[i] == base:
            out.append(self._bases[i][1])
            i += 1
        return out

    def _beside(self, source_file: str | None, pointer: str) -> tuple[str, str | None] | None:
        base = pointer.replace("\\", "/").rsplit("/", 1)[-1]
        if not base or base in (".", ".."):
            return None
        folder = _member_folder(source_file)
        name = f"{folder}{base}"
        return (name, None) if name in self.members.by_name else None

    def _grok_asset(self, att: Attachment) -> tuple[str, str | None] | None:
        asset = att.id
        if asset is None and att.pointer and (m := _GROK_ASSET.search(att.pointer)):
            asset = m.group(1)
        name = self._grok.get(asset) if asset else None
        return (name, None) if name else None


def _member_folder(source_file: str | None) -> str:
    """The folder (with its `/`) of the chat file a conversation came from, inside its upload ("" at the top)."""
    if not source_file or "!" not in source_file:
        return ""
    member = source_file.split("!", 1)[1]
    return member.rsplit("/", 1)[0] + "/" if "/" in member else ""


def _asset_names(members: Members) -> dict[str, str]:
    """ChatGPT's `conversation_asset_file_names.json` (`<id>.dat` -> original name), from any folder."""
    out: dict[str, str] = {}
    for member in members:
        if member.name.rsplit("/", 1)[-1] != ASSET_NAMES or member.size > _MAX_ASSET_NAMES_BYTES:
            continue
        try:
            with member.open() as f:
                data: Any = json.loads(f.read())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.update({k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)})
    return out
