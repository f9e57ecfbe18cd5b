"""Chat-export JSON renderings: `chat-export/1` and the extension's `sharegpt/1` files.

- `read_json`: `{"schema": "chat-export/1", platform, url, title, exported_at, chat_id, model, messages: [...]}`
- `read_sharegpt1`: `{"schema": "sharegpt/1", platform, title, conversations: [{from, value}]}`
"""

from __future__ import annotations

from collections.abc import Iterator

from chatetl.model import Conversation
from chatetl.readers.convert import Convert, read_records
from chatetl.readers.entry import Entry
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms.chat_export.builder import conversation_from_export
from chatetl.readers.report import ReadReport


def read_json(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """A `chat-export/1` JSON file (one object; an array of them is read too)."""
    return read_records(entry, shape or Shape.OBJECT, report, json_converter)


def read_sharegpt1(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """A `sharegpt/1` JSON file written by the extension: {"schema", "platform", "title", "conversations"}."""
    return read_records(entry, shape or Shape.OBJECT, report, sharegpt1_converter)


def json_converter(name: str, report: ReadReport) -> Convert:
    """How one `chat-export/1` object of file `name` becomes a Conversation."""
    return lambda record, where: conversation_from_export(record, report, rendering="json", file=name, where=where)


def sharegpt1_converter(name: str, report: ReadReport) -> Convert:
    """How one `sharegpt/1` object of file `name` becomes a Conversation."""
    return lambda record, where: conversation_from_export(record, report, rendering="sharegpt/1", file=name, where=where)
