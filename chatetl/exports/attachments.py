"""The attachments a person sees in an exported file (the note Markdown, HTML): images shown, files linked,
a missing file named. (The Chat Export Markdown and JSON layouts read back into the same turns: they add none.)

An attachment whose bytes were stored is linked as `../files/<sha256><ext>`: from any format's folder
(`exports/<format>/`) to `exports/files/`, so the links hold wherever the export folder is moved or
zipped. The name is the content hash and an extension from the sniffed type, never the upload's own file
name. `publish_files` copies the bytes there from the attachment store (once: the key is the content);
the day's zip holds the same `files/<sha256><ext>` beside its format folders (`linked_names`).
"""

from __future__ import annotations

import mimetypes
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

from chatetl.exports.meta import ExportView, without_controls
from chatetl.layout import EXPORT_FILES_PREFIX, EXPORTS_PREFIX, attachment_key
from chatetl.model import Attachment, Conversation
from chatetl.storage import ObjectStore

LINKING_FORMATS = ("md", "html")  # the formats whose files link the attachments' copies
FILES_FOLDER = EXPORT_FILES_PREFIX.removeprefix(EXPORTS_PREFIX).rstrip("/")  # (exports/files/, beside each format's folder)
_LINK_SPECIAL = re.compile(r"[\\\[\]<>`*_]")
_EXTENSIONS = {"image/jpeg": ".jpg", "image/png": ".png", "image/gif": ".gif", "image/webp": ".webp", "application/pdf": ".pdf",
               "audio/wav": ".wav", "audio/mpeg": ".mp3", "video/mp4": ".mp4", "text/plain": ".txt"}


def file_name(att: Attachment) -> str | None:
    """The exported copy's name (`<sha256><ext>`), or None where the export did not contain the file."""
    if att.content_hash is None:
        return None
    mime = att.mime_type or ""
    ext = _EXTENSIONS.get(mime) or (mimetypes.guess_extension(mime, strict=False) if "/" in mime else None) or ""
    return f"{att.content_hash}{ext}"


def linked_names(views: Iterable[ExportView]) -> list[str]:
    """The copies' names (`file_name`) the md and html files of these views link, each once, in order."""
    names: dict[str, None] = {}
    for view in views:
        for turn in view.turns:
            for att in view.attachments(turn):
                name = file_name(att)
                if name is not None:
                    names[name] = None
    return list(names)


def source_key(name: str) -> str:
    """The attachment store's key of a copy's bytes (`name` as `file_name` gives it: the hash, then the extension)."""
    return attachment_key(name.split(".", 1)[0])


def href(att: Attachment) -> str | None:
    """The link from an exported file to the attachment's copy, relative."""
    name = file_name(att)
    return None if name is None else f"../{FILES_FOLDER}/{name}"


def shown_name(att: Attachment) -> str:
    """The name a person reads (one line, no controls)."""
    name = " ".join(without_controls(att.name or "").split())
    return name or {"image": "image", "audio": "audio", "video": "video"}.get(att.kind, "file")


def is_image(att: Attachment) -> bool:
    return att.kind == "image" or (att.mime_type or "").startswith("image/")


def missing_note(att: Attachment) -> str:
    """What stands in for a file the export did not contain."""
    if att.text:
        return "not in the export (its text is kept)"
    return "not in the export"


def markdown_lines(attachments: Iterable[Attachment]) -> list[str]:
    """Markdown for a turn's attachments: `![name](../files/…)`, `[name](../files/…)`, or a placeholder."""
    out = []
    for att in attachments:
        name, link = _LINK_SPECIAL.sub(r"\\\g<0>", shown_name(att)), href(att)
        if link is None:
            out.append(f"> 📎 {name}: {missing_note(att)}")
        elif is_image(att):
            out.append(f"![{name}]({link})")
        else:
            out.append(f"📎 [{name}]({link})")
    return out


def with_attachments(body: str, attachments: list[Attachment]) -> str:
    """A turn's Markdown body with its attachments after it (a blank line between)."""
    if not attachments:
        return body
    lines = "\n\n".join(markdown_lines(attachments))
    return f"{body.rstrip()}\n\n{lines}" if body.strip() else lines


def publish_files(store: ObjectStore, conv: Conversation) -> list[str]:
    """Copy the stored bytes of `conv`'s attachments to `exports/files/` where missing; the keys written."""
    written = []
    seen: set[str] = set()
    for message in conv.messages:
        for att in message.attachments:
            name = file_name(att)
            if name is None or name in seen:
                continue
            seen.add(name)
            key, source = f"{EXPORT_FILES_PREFIX}{name}", attachment_key(att.content_hash or "")
            if store.head(key) is not None or store.head(source) is None:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                store.put_file(key, store.download(source, Path(tmp, "file")), att.mime_type)
            written.append(key)
    return written
