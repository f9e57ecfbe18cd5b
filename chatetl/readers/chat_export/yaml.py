"""Chat-export YAML: the same meta keys as the JSON rendering plus a `messages:` list.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Iterator

import yaml

from chatetl.model import Conversation
from chatetl.readers.chat_export.builder import conversation_from_export
from chatetl.readers.detect import Layout
from chatetl.readers.entry import Entry
from chatetl.readers.jsonstream import convert_records
from chatetl.readers.report import ReadReport

# A YAML export is one chat, parsed whole (PyYAML does not stream): bigger is not such a file.
MAX_YAML_BYTES = 64 * 1024 * 1024


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader refusing `*alias` references: exports never write them, and a few nested
    aliases (a "billion laughs") unfold into billions of values when the tree is walked."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, f"alias *{event.anchor} (YAML aliases are not allowed)", event.start_mark)
        return super().compose_node(parent, index)


def read_yaml(entry: Entry, layout: Layout | None, report: ReadReport) -> Iterator[Conversation]:
    """A YAML export: meta keys and a `messages:` list (block scalars for bodies)."""

    def records() -> Iterator[tuple[str, Any]]:
        with entry.open() as raw:
            data_bytes = raw.read(MAX_YAML_BYTES + 1)
        if len(data_bytes) > MAX_YAML_BYTES:
            report.error(entry.name, "", f"YAML file larger than {MAX_YAML_BYTES} bytes: not read")
            return
        text = data_bytes.decode("utf-8-sig", errors="replace")
        del data_bytes
        try:
            data = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            report.error(entry.name, where, f"malformed YAML: {exc.problem or exc.context or 'parse error'}", raw=text.encode())
            return
        except yaml.YAMLError as exc:
            report.error(entry.name, "", f"malformed YAML: {exc}", raw=text.encode())
            return
        except RecursionError:
            report.error(entry.name, "", "YAML nested too deeply")
            return
        if not isinstance(data, dict):
            report.error(entry.name, "", f"YAML top level is {type(data).__name__}, not a mapping of meta keys and messages")
            return
        if _has_typed_scalars(data):
            _restore_scalar_text(data, text)
        yield "", data

    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_export(record, report, rendering="yaml", file=entry.name, strip_block_newline=True)

    yield from convert_records(entry, records(), report, convert)


def _walk(data: Any) -> Iterator[Any]:
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        else:
            yield v


def _has_typed_scalars(data: Any) -> bool:
    return any(isinstance(v, (bool, int, float, date)) for v in _walk(data))


def _restore_scalar_text(data: dict, text: str) -> None:
    """YAML 1.1 turns a reply `yes` into True, `3:25` into 205 and `0123` into 83: every value in this
    format is text, so take typed scalars back to exactly what the file says (from the node tree,
    which `yaml.compose` builds without constructing any object)."""
    try:
        root = yaml.compose(text, Loader=_NoAliasLoader)
    except (yaml.YAMLError, RecursionError):
        return
    stack: list[tuple[Any, Any]] = [(data, root)]
    while stack:
        value, node = stack.pop()
        if isinstance(value, dict) and isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is None or key not in value:
                    continue
                child = value[key]
                if isinstance(child, (dict, list)):
                    stack.append((child, value_node))
                elif isinstance(child, (bool, int, float, date)) and isinstance(value_node, yaml.ScalarNode):
                    value[key] = value_node.value
        elif isinstance(value, list) and isinstance(node, yaml.SequenceNode):
            for j, (child, child_node) in enumerate(zip(value, node.value)):
                if isinstance(child, (dict, list)):
                    stack.append((child, child_node))
                elif isinstance(child, (bool, int, float, date)) and isinstance(child_node, yaml.ScalarNode):
                    value[j] = child_node.value
