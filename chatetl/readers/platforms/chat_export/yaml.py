"""Chat-export YAML: the same meta keys as the JSON rendering plus a `messages:` list.

Read as a stream of parser events, not as one document: the top-level mapping is walked event by
event, and each meta value and each item of `messages` is composed into a node tree and
constructed on its own, so the memory a read takes beyond the conversation it builds follows the
largest message, never the file: a YAML export chatetl writes (`exports/yaml_export.py`, of any
size) reads back.

The events come from LibYAML (`yaml.cyaml.CParser`, the C parser behind `CSafeLoader`) where PyYAML
was built with it, else from PyYAML's pure-Python Reader/Scanner/Parser (the same events); node
trees from PyYAML's own `Composer` (which asks its parser for nothing but `check_event`,
`peek_event` and `get_event`), values from its `SafeConstructor`. Sources: PyYAML's
`lib/yaml/composer.py`, `resolver.py` and `cyaml.py` (yaml/pyyaml), LibYAML's `yaml_parser_parse`
event API, and the event-fed Composer of the public gist bonzini/b8096e558c099562b31e.

Every value in this format is text, so a plain scalar is never retyped (`_TextResolver`: a reply
`yes`, `0123`, `3:25`, `2026-01-02` or `=` stays as written; `null`, `~` and an empty value are still
none), and an explicitly tagged one (`!!int 0123`) goes back to its text (`_restored`).

Caps: one value (a message item, a meta key or value, or a top level that is not a mapping) of more
than `MAX_YAML_VALUE_CHARS` characters is not read: the file is reported with the place the value
began and its conversation left out (a parser cannot skip half a value and go on). The characters
the parser is fed are counted from where the previous value ended, so a longer value is stopped
once the parser has read that far past it, before it is all in memory.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any, BinaryIO

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.resolver import Resolver

from chatetl.model import Conversation
from chatetl.readers.convert import convert_records
from chatetl.readers.entry import Entry
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms.chat_export.builder import conversation_from_export
from chatetl.readers.report import ReadReport

try:
    from yaml._yaml import CParser  # (what yaml.cyaml re-exports)
except ImportError:  # PyYAML built without LibYAML
    _WITH_LIBYAML = False
else:
    _WITH_LIBYAML = True

# One message item or meta value, in characters of YAML: 64 Mi, the old cap on a whole file, so
# every file that read before still reads. A longer value stops the read of its file.
MAX_YAML_VALUE_CHARS = 64 * 1024 * 1024
# The parsers read ahead of the event they return by a chunk (LibYAML asks for 16 KiB, PyYAML for
# 64 Ki characters): the guard on the stream allows for it; the exact check is on a value's span.
_READ_AHEAD = 128 * 1024
# A malformed file is kept whole for quarantine up to this size (the report's own cap on kept bytes).
MAX_QUARANTINE_BYTES = 64 * 1024 * 1024

_TYPED = (bool, int, float, date)  # what a tag such as `!!int` or `!!timestamp` constructs
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_RETYPING = frozenset({f"tag:yaml.org,2002:{t}" for t in ("bool", "int", "float", "timestamp", "value")})


class _TextResolver(Resolver):
    """YAML 1.1's implicit types without those that retype text (bool, int, float, timestamp, `=`):
    a plain scalar is a string, or none (`null`, `~`, nothing), or a `<<` merge."""

    yaml_implicit_resolvers: dict[Any, list[tuple[str, Any]]] = {  # noqa: RUF012 (the stubs declare it an instance attribute: ClassVar clashes)
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in _RETYPING]
        for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }


class _ValueTooLong(Exception):
    """Raised from the stream the parser reads, once one value has taken more than the cap."""

    def __init__(self, stream: _CountedText) -> None:
        super().__init__(stream.what)
        self.stream = stream  # what was being read, and where it began


class _CountedText:
    """The file as text for the parser, counting the characters it is fed past the last value's end."""

    def __init__(self, raw: BinaryIO, cap: int) -> None:
        # utf-8-sig: a BOM is not content; newline="": YAML itself reads CR LF as one line break
        self._text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")
        self.name = "<file>"  # both parsers name the stream in their marks
        self.cap = cap
        self.fed = 0  # characters handed to the parser (a mark's `index` counts the same)
        self.start = 0  # where the previous value ended
        self.start_mark: Any = None  # where the value being read began (or the previous one ended)
        self.what = "the top level"

    def after(self, mark: Any, what_next: str) -> None:
        self.start, self.start_mark, self.what = mark.index, mark, what_next

    def read(self, size: int = -1) -> str:
        chunk = self._text.read(size)
        self.fed += len(chunk)
        if self.fed - self.start > self.cap + _READ_AHEAD:
            raise _ValueTooLong(self)
        return chunk


class _NoAliasComposer(Composer):
    """PyYAML's Composer refusing `*alias` references: exports never write them, and a few nested
    aliases (a "billion laughs") unfold into billions of values when the tree is walked. Anchors are
    remembered by their place only (a repeated one is still an error), never by their node."""

    def __init__(self) -> None:
        super().__init__()
        self.anchor_marks: dict[str, Any] = {}

    # the Parser this composer is mixed with (each loader below) gives the events
    peek_event: Callable[[], Any]

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            # (LibYAML's marks are not PyYAML's class but read as they do: their place is all the error uses)
            mark: Any = event.start_mark
            raise ComposerError(None, None, f"alias *{event.anchor} (YAML aliases are not allowed)", mark)
        self.note_anchor(event)
        return super().compose_node(parent, index)

    def note_anchor(self, event: Any) -> None:
        anchor = getattr(event, "anchor", None)
        if anchor is None:
            return
        if anchor in self.anchor_marks:
            raise ComposerError(f"found duplicate anchor {anchor!r}; first occurrence", self.anchor_marks[anchor], "second occurrence", event.start_mark)
        self.anchor_marks[anchor] = event.start_mark


class _SafeConstructor(SafeConstructor):
    """SafeConstructor, with a tag it cannot build (`!!timestamp 2026-13-45`) malformed YAML at that
    scalar's place, not a ValueError out of the reader."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:
            raise ConstructorError(None, None, f"cannot construct {node.tag}: {exc}", node.start_mark) from None


class _PythonStreamLoader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _NoAliasComposer, _SafeConstructor, _TextResolver):
    """Events from PyYAML's pure-Python parser."""

    def __init__(self, stream: _CountedText) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        _NoAliasComposer.__init__(self)
        _SafeConstructor.__init__(self)
        _TextResolver.__init__(self)


if _WITH_LIBYAML:

    class _LibYAMLStreamLoader(CParser, _NoAliasComposer, _SafeConstructor, _TextResolver):
        """Events from LibYAML (bench/yaml_readback.py: several times the pure-Python parser's speed)."""

        def __init__(self, stream: _CountedText) -> None:
            CParser.__init__(self, stream)
            _NoAliasComposer.__init__(self)
            _SafeConstructor.__init__(self)
            _TextResolver.__init__(self)

    STREAM_LOADER: type = _LibYAMLStreamLoader
else:  # pragma: no cover - PyYAML without LibYAML
    STREAM_LOADER = _PythonStreamLoader


# chatetl's own note Markdown (`chatetl export --format md`) opens with YAML front matter that names a
# title and `messages:`, as a YAML export does; its turns are `##` headings and verbatim bodies, which a
# body's own headings make ambiguous, so it is refused by name rather than read back unfaithfully
NOTE_MARKDOWN = (
    "not a chat export file: this is chatetl's note Markdown (`export --format md`: YAML front matter, then "
    "the turns under headings), which is not read back; read the export it was made from, or export "
    "chat-export-json, chat-export-md or yaml to read back"
)
NOTE_HEAD_BYTES = 64 * 1024  # the front matter of a note: a title, a url and a few short keys


def is_note_markdown(entry: Entry) -> bool:
    """Front matter (`---` ... `---`) followed by a `# ` title: chatetl's note Markdown, not a YAML document."""
    with entry.open() as raw:
        head = raw.read(NOTE_HEAD_BYTES).decode("utf-8", "replace").lstrip("\ufeff").replace("\r\n", "\n")
    if not head.startswith("---\n"):
        return False
    end = head.find("\n---\n", 3)
    return end >= 0 and head[end + 5:].lstrip("\n").startswith("# ")


def read_yaml(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """A YAML export: meta keys and a `messages:` list (block scalars for bodies)."""

    def records() -> Iterator[tuple[str, Any]]:
        if is_note_markdown(entry):
            report.error(entry.name, "", NOTE_MARKDOWN)
            return
        try:
            with entry.open() as raw:
                stream = _CountedText(raw, MAX_YAML_VALUE_CHARS)
                loader = STREAM_LOADER(stream)
                try:
                    data = _read_document(loader, stream)
                finally:
                    loader.dispose()
        except _ValueTooLong as too_long:
            cap = f"{MAX_YAML_VALUE_CHARS:,} characters (the cap on one YAML value)"
            report.error(entry.name, _place(too_long.stream.start_mark), f"{too_long.stream.what} is longer than {cap}: not read")
            return
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            report.error(entry.name, _place(mark), f"malformed YAML: {exc.problem or exc.context or 'parse error'}", raw=_quarantine_bytes(entry))
            return
        except yaml.YAMLError as exc:
            report.error(entry.name, "", f"malformed YAML: {exc}", raw=_quarantine_bytes(entry))
            return
        except RecursionError:
            report.error(entry.name, "", "YAML nested too deeply")
            return
        if not isinstance(data, dict):
            report.error(entry.name, "", f"YAML top level is {type(data).__name__}, not a mapping of meta keys and messages")
            return
        yield "", data

    def convert(record: Any, where: str) -> Conversation | None:
        # each body lost its block scalar's added newline as it was read (`_without_block_newline`)
        return conversation_from_export(record, report, rendering="yaml", file=entry.name, strip_block_newline=False)

    yield from convert_records(entry, records(), report, convert)


def _place(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def _quarantine_bytes(entry: Entry) -> bytes | None:
    """The file as it is, for quarantine, when it is small enough to keep."""
    if entry.size is not None and entry.size > MAX_QUARANTINE_BYTES:
        return None
    with entry.open() as raw:
        data = raw.read(MAX_QUARANTINE_BYTES + 1)
    return data if len(data) <= MAX_QUARANTINE_BYTES else None


def _read_document(loader: Any, stream: _CountedText) -> Any:
    """The one document of the file: a top-level mapping streamed key by key, anything else read
    whole (under the cap on one value) to say what it is. As in `Composer.get_single_node`, a
    second document is an error."""
    loader.get_event()  # StreamStart
    if loader.check_event(yaml.StreamEndEvent):
        return None  # an empty file: no document
    document = loader.get_event()  # DocumentStart
    if _plain_start(loader, yaml.MappingStartEvent, yaml.MappingNode, _MAP_TAG):
        data = _mapping(loader, stream)
    else:
        data = _value(loader, stream, "the top level")
    loader.get_event()  # DocumentEnd
    if not loader.check_event(yaml.StreamEndEvent):
        event = loader.get_event()
        raise ComposerError("expected a single document in the stream", document.start_mark, "but found another document", event.start_mark)
    return data


def _plain_start(loader: Any, event_type: type, node_type: type, tag: str) -> bool:
    """The next event opens a plain mapping or sequence (no tag but its own): one to walk event by event."""
    if not loader.check_event(event_type):
        return False
    event = loader.peek_event()
    resolved = event.tag if event.tag not in (None, "!") else loader.resolve(node_type, None, event.implicit)
    return bool(resolved == tag)


def _mapping(loader: Any, stream: _CountedText) -> dict[Any, Any]:
    """The top-level mapping, one key and one value at a time; `messages` item by item."""
    start = loader.get_event()
    loader.note_anchor(start)
    stream.after(start.end_mark, "a top-level key")
    record: dict[Any, Any] = {}
    explicit: set[Any] = set()  # keys written out, which a `<<` merge never overrides
    while not loader.check_event(yaml.MappingEndEvent):
        key_node = _compose(loader, stream, "a top-level key")
        if key_node.tag == _MERGE_TAG:  # `<<: {...}`: its keys, unless written out
            merged = yaml.MappingNode(_MAP_TAG, [(key_node, _compose(loader, stream, "the value of `<<`"))])
            for k, v in _restored(_construct(loader, merged), merged).items():
                if k not in explicit:
                    record[k] = v
            stream.what = "a top-level key"
            continue
        key = _construct(loader, key_node)
        try:
            hash(key)
        except TypeError:
            raise ConstructorError("while constructing a mapping", start.start_mark, "found unhashable key", key_node.start_mark) from None
        what = f"the value of `{key[:60]}`" if isinstance(key, str) else "a top-level value"
        stream.what = what
        if key == "messages" and _plain_start(loader, yaml.SequenceStartEvent, yaml.SequenceNode, _SEQ_TAG):
            record[key] = _messages(loader, stream)
        else:
            record[key] = _value(loader, stream, what)
        explicit.add(key)
        stream.what = "a top-level key"
    loader.get_event()  # MappingEnd
    return record


def _messages(loader: Any, stream: _CountedText) -> list[Any]:
    """The `messages` sequence, one item composed and constructed at a time."""
    start = loader.get_event()
    loader.note_anchor(start)
    stream.after(start.end_mark, "message 0")
    messages: list[Any] = []
    while not loader.check_event(yaml.SequenceEndEvent):
        messages.append(_without_block_newline(_value(loader, stream, f"message {len(messages)}")))
        stream.what = f"message {len(messages)}"
    stream.after(loader.get_event().end_mark, "a top-level key")  # SequenceEnd
    return messages


def _value(loader: Any, stream: _CountedText, what: str) -> Any:
    node = _compose(loader, stream, what)
    return _restored(_construct(loader, node), node)


def _compose(loader: Any, stream: _CountedText, what: str) -> Any:
    """One node tree, its characters counted against the cap from where the previous value ended."""
    stream.what = what
    stream.start_mark = loader.peek_event().start_mark  # a long scalar is read (and capped) right here
    node = loader.compose_node(None, None)
    loader.anchors = {}  # aliases are refused: no node is ever looked up by its anchor again
    if node.end_mark.index - node.start_mark.index > stream.cap:
        raise _ValueTooLong(stream)
    stream.after(node.end_mark, "what follows " + what)
    return node


def _construct(loader: Any, node: Any) -> Any:
    return loader.construct_document(node)


def _without_block_newline(item: Any) -> Any:
    """Every body is written with one newline added (`text: |`, exports/yaml_export.py): taken off
    here, as each message is read, so the conversation keeps this one string rather than a copy."""
    if isinstance(item, str):
        return item.removesuffix("\n")
    if isinstance(item, dict):
        text = item.get("text")
        if isinstance(text, str):
            item["text"] = text.removesuffix("\n")
    return item


def _restored(value: Any, node: Any) -> Any:
    """A value with the scalars an explicit tag typed (`!!int 0123`, `!!bool yes`) back to exactly
    what the file says: every value in this format is text."""
    if isinstance(value, _TYPED) and isinstance(node, yaml.ScalarNode):
        return node.value
    if isinstance(value, (dict, list)):
        _restore_scalar_text(value, node)
    return value


def _restore_scalar_text(data: dict[str, Any] | list[Any], root: Any) -> None:
    """Typed scalars inside `data` back to their text, walking `data` beside the node tree it was built from."""
    stack: list[tuple[Any, Any]] = [(data, root)]
    while stack:
        value, node = stack.pop()
        if isinstance(value, dict) and isinstance(node, yaml.MappingNode):
            last: dict[Any, Any] = {}  # a repeated key: the last one is the value constructed
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    last[key_node.value] = value_node
            for key, value_node in last.items():
                if key not in value:
                    continue
                child = value[key]
                if isinstance(child, (dict, list)):
                    stack.append((child, value_node))
                elif isinstance(child, _TYPED) and isinstance(value_node, yaml.ScalarNode):
                    value[key] = value_node.value
        elif isinstance(value, list) and isinstance(node, yaml.SequenceNode):
            for j, (child, child_node) in enumerate(zip(value, node.value)):
                if isinstance(child, (dict, list)):
                    stack.append((child, child_node))
                elif isinstance(child, _TYPED) and isinstance(child_node, yaml.ScalarNode):
                    value[j] = child_node.value
