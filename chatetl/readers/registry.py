"""The platform readers, one entry a format: the shape its files have when detection does not say, and
how a file of it is read: its records each converted on their own (`converter`), or the whole file by
the reader's own function (`read`: records that depend on each other, or a file that is no records)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from chatetl.model import Conversation
from chatetl.readers.convert import Converter, read_records
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.detect import Format
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms import (
    ai_studio,
    chatgpt,
    claude_ai,
    claude_ai_account,
    claude_code,
    codex_cli,
    deepseek,
    gemini,
    gemini_cli,
    grok,
    le_chat,
    open_webui,
    opencode,
    rex,
    sharegpt,
)
from chatetl.readers.platforms.chat_export import json as chat_export_json
from chatetl.readers.platforms.chat_export import markdown, yaml
from chatetl.readers.report import ReadReport

Read = Callable[[Entry, Shape, ReadReport], Iterator[Conversation]]
# a sidecar's reader: no conversation, only what the account keeps beside its chats (into `ReadReport.kept`)
ReadKept = Callable[[Entry, Shape, ReadReport], None]


@dataclass(frozen=True)
class Reader:
    """A format's reader. Exactly one of `converter` (each record of the file, in its shape, becomes a
    conversation on its own: `converter(file name, report)(record, where)`; so the records of one file
    may be converted anywhere, in any order, and merged in theirs) and `read` (the file read by the
    reader's own function) is set."""

    format: Format
    shape: Shape
    converter: Converter | None = None
    read: Read | None = None

    def __post_init__(self) -> None:
        if (self.converter is None) == (self.read is None):
            raise ValueError(f"the reader of {self.format.value}: give a converter or a read function, one of them")

    def conversations(self, entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
        """The conversations of one file of this format (`shape`: as detected; None: the format's own)."""
        shape = shape or self.shape
        if self.read is not None:
            return self.read(entry, shape, report)
        assert self.converter is not None  # (__post_init__)
        return read_records(entry, shape, report, self.converter)


READERS: dict[Format, Reader] = {
    reader.format: reader
    for reader in (
        Reader(Format.CHATGPT, Shape.ARRAY, converter=chatgpt.record_converter),
        Reader(Format.CLAUDE_AI, Shape.ARRAY, converter=claude_ai.record_converter),
        Reader(Format.CHAT_EXPORT_JSON, Shape.OBJECT, converter=chat_export_json.json_converter),
        Reader(Format.CHAT_EXPORT_SHAREGPT, Shape.OBJECT, converter=chat_export_json.sharegpt1_converter),
        Reader(Format.CHAT_EXPORT_MD, Shape.TEXT, read=markdown.read_markdown),
        Reader(Format.CHAT_EXPORT_YAML, Shape.TEXT, read=yaml.read_yaml),
        Reader(Format.SHAREGPT, Shape.ARRAY, read=sharegpt.read),  # (a repeat of an earlier record is left out)
        Reader(Format.REX, Shape.ARRAY, read=rex.read),  # (two passes: the newest resync of each record wins)
        Reader(Format.CLAUDE_CODE, Shape.JSONL, read=claude_code.read),
        Reader(Format.GEMINI, Shape.ARRAY, read=gemini.read),  # (activity rows grouped into conversations)
        Reader(Format.GEMINI_HTML, Shape.TEXT, read=gemini.read_html),
        Reader(Format.DEEPSEEK, Shape.ARRAY, converter=deepseek.record_converter),
        Reader(Format.DEEPSEEK_API, Shape.OBJECT, converter=deepseek.api_converter),
        Reader(Format.GROK, Shape.OBJECT, read=grok.read),  # (the items of one member of the object)
        Reader(Format.GROK_WEB, Shape.OBJECT, converter=grok.capture_converter),
        Reader(Format.OPEN_WEBUI, Shape.ARRAY, converter=open_webui.record_converter),
        Reader(Format.AI_STUDIO, Shape.OBJECT, converter=ai_studio.record_converter),
        Reader(Format.LE_CHAT, Shape.ARRAY, read=le_chat.read),  # (a file's records are one chat's messages)
        Reader(Format.CODEX_CLI, Shape.JSONL, read=codex_cli.read),  # (one session a file, its lines in order)
        Reader(Format.GEMINI_CLI, Shape.JSONL, read=gemini_cli.read),  # (later lines update and rewind earlier ones)
        Reader(Format.OPENCODE, Shape.OBJECT, converter=opencode.record_converter),
    )
}

# The sidecars that hold keepsakes (projects, memories), each with the shape its files have when detection does not say.
KEEPSAKE_READERS: dict[Format, tuple[Shape, ReadKept]] = {
    Format.CLAUDE_AI_SIDECAR: (Shape.ARRAY, claude_ai_account.read),
}

__all__ = ["KEEPSAKE_READERS", "READERS", "Read", "ReadKept", "Reader"]
