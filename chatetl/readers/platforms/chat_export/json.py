"""Chat-export JSON renderings: `chat-export/1` and the extension's `sharegpt/1` files.

- `read_json`: `{"schema": "chat-export/1", platform, url, title, exported_at, chat_id, model, messages: [...]}`
- `read_sharegpt1`: `{"schema": "sharegpt/1", platform, title, conversations: [{from, value}]}`
"""

from __future__ import annotations

from typing import Any, Iterator

from chatetl.model import Conversation
from chatetl.readers.convert import convert_records
from chatetl.readers.entry import Entry
from chatetl.readers.jsonscan.records import Shape, iter_records
from chatetl.readers.platforms.chat_export.builder import conversation_from_export
from chatetl.readers.report import ReadReport


def read_json(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """A `chat-export/1` JSON file (one object; an array of them is read too)."""

    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_export(record, report, rendering="json", file=entry.name, where=where)

    yield from convert_records(entry, iter_records(entry, shape or Shape.OBJECT, report), report, convert)


def read_sharegpt1(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """A `sharegpt/1` JSON file written by the extension: {"schema", "platform", "title", "conversations"}."""

    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_export(record, report, rendering="sharegpt/1", file=entry.name, where=where)

    yield from convert_records(entry, iter_records(entry, shape or Shape.OBJECT, report), report, convert)


