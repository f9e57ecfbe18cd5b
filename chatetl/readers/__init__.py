"""Readers: every export format into the canonical model, one conversation at a time.

`read_entry` is the one entry point: it opens archives and folders, detects each
file's format from its content and hands it to that format's reader.

What every reader shares: `jsonstream` (records streamed out of a file, each converted with
its errors placed, branches resolved by `tree`), `fields` (a record's fields read
defensively, unknown ones counted as drift and kept), `platforms` (platform and id from a
name or URL), `timeutil` (times into aware UTC) and `report` (what reading found).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable, Iterable, Iterator

from chatetl.model import Conversation
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import expand, expand_folder, until_damaged
from chatetl.readers.inputs.detect import SIDECARS, Format
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.report import ReadError, ReadReport

__all__ = ["Entry", "Format", "ReadError", "ReadReport", "read_entry", "read_entries", "read_path"]

Reader = Callable[[Entry, Shape | None, ReadReport], Iterator[Conversation]]

# format -> "module:function"; each reader yields conversations with branches resolved
READERS: dict[Format, str] = {
    Format.CHATGPT: "chatetl.readers.platforms.chatgpt:read",
    Format.CLAUDE_AI: "chatetl.readers.platforms.claude_ai:read",
    Format.CHAT_EXPORT_JSON: "chatetl.readers.platforms.chat_export.json:read_json",
    Format.CHAT_EXPORT_SHAREGPT: "chatetl.readers.platforms.chat_export.json:read_sharegpt1",
    Format.CHAT_EXPORT_MD: "chatetl.readers.platforms.chat_export.markdown:read_markdown",
    Format.CHAT_EXPORT_YAML: "chatetl.readers.platforms.chat_export.yaml:read_yaml",
    Format.SHAREGPT: "chatetl.readers.platforms.sharegpt:read",
    Format.REX: "chatetl.readers.platforms.rex:read",
    Format.CLAUDE_CODE: "chatetl.readers.platforms.claude_code:read",
    Format.GEMINI: "chatetl.readers.platforms.gemini:read",
    Format.GEMINI_HTML: "chatetl.readers.platforms.gemini:read_html",
    Format.DEEPSEEK: "chatetl.readers.platforms.deepseek:read",
    Format.GROK: "chatetl.readers.platforms.grok:read",
    Format.OPEN_WEBUI: "chatetl.readers.platforms.open_webui:read",
    Format.AI_STUDIO: "chatetl.readers.platforms.ai_studio:read",
    Format.LE_CHAT: "chatetl.readers.platforms.le_chat:read",
}


def reader_for(fmt: Format) -> Reader | None:
    target = READERS.get(fmt)
    if target is None:
        return None
    module, func = target.split(":")
    try:
        return getattr(importlib.import_module(module), func)
    except (ImportError, AttributeError):
        return None


def _read_leaves(leaves: Iterable[tuple[Entry, Format, Shape | None]], report: ReadReport) -> Iterator[Conversation]:
    for leaf, fmt, shape in leaves:
        if fmt in SIDECARS:
            report.skip(f"{fmt.value} file")
            continue
        reader = reader_for(fmt)
        if reader is None:
            report.error(leaf.name, "", f"format {fmt.value} is recognized but has no reader yet")
            continue
        report.files += 1
        report.formats[fmt.value] += 1
        yield from until_damaged(reader(leaf, shape, report), leaf.name, report)


def read_entry(entry: Entry, report: ReadReport) -> Iterator[Conversation]:
    """Every conversation in one input (a file or an archive)."""
    yield from _read_leaves(expand(entry, report), report)


def read_path(path: str | Path, report: ReadReport) -> Iterator[Conversation]:
    """Every conversation in a local file or folder."""
    p = Path(path)
    if p.is_dir():
        yield from _read_leaves(expand_folder(p, report), report)
    elif p.exists():
        yield from read_entry(Entry.from_path(p), report)
    else:
        report.error(str(p), "", "no such file or folder")


def read_entries(entries: Iterable[Entry], report: ReadReport) -> Iterator[Conversation]:
    for entry in entries:
        yield from read_entry(entry, report)
