"""YAML, the Chat Export extension's layout: the JSON's meta keys without `schema`, then `messages:`; bodies as block scalars.

Every body is written with one trailing newline added (`text: |` then the lines, as the
extension's files have it), which chatetl's YAML reader takes off again, so a body ending in newlines, or a
one-word body, reads back exactly. PyYAML falls back to a double-quoted scalar where a block
scalar cannot hold the text exactly (trailing spaces before a line break, tabs, control
characters); `safe_dump` quotes what YAML would otherwise turn into another type (`yes`, `1:20`,
`0123`, `null`, `2026-01-01`).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from chatetl.exports.meta import ExportView, source_list

_NOT_IN_BLOCKS = ("\r", "\x85")  # YAML turns these into "\n" in block and single-quoted scalars: escape them


class _Body(str):
    """A message body: written as a literal block scalar where that is exact."""


class _Dumper(yaml.SafeDumper):
    pass


_FastBase: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _FastDumper(_FastBase):  # type: ignore[misc]
    """LibYAML's emitter (several times faster, bench/RESULTS.md): the same output, except that it escapes characters beyond
    U+FFFF (emoji) into double-quoted scalars and cannot write a lone surrogate (a damaged source's; the
    Python emitter escapes it), so records holding either go through the Python emitter."""


def _body(dumper: yaml.SafeDumper, value: _Body) -> yaml.ScalarNode:
    style = '"' if any(ch in value for ch in _NOT_IN_BLOCKS) else "|"
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style=style)


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if any(ch in value for ch in _NOT_IN_BLOCKS):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_str(value)


for _dumper in (_Dumper, _FastDumper):
    _dumper.add_representer(_Body, _body)
    _dumper.add_representer(str, _text)

_NOT_FOR_LIBYAML = re.compile("[\U00010000-\U0010FFFF\ud800-\udfff]")  # beyond U+FFFF, or a lone surrogate


def _needs_python_emitter(record: dict[str, Any]) -> bool:
    stack: list[Any] = [record]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if _NOT_FOR_LIBYAML.search(value):
                return True
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def yaml_record(view: ExportView) -> dict[str, Any]:
    record: dict[str, Any] = dict(view.meta())
    messages = []
    for t in view.turns:
        item: dict[str, Any] = {"role": t.role.value}
        if t.tag != t.role.value:
            item["role_tag"] = t.tag
        if t.name and not t.visible:
            item["name"] = t.name
        item["text"] = _Body(t.text + "\n")
        sources = source_list(t.citations)
        if sources:
            item["sources"] = sources
        messages.append(item)
    record["messages"] = messages
    return record


def to_yaml(view: ExportView) -> str:
    record = yaml_record(view)
    dumper = _Dumper if _needs_python_emitter(record) else _FastDumper
    return yaml.dump(record, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1_000_000)
