"""A Message node's properties, made a column at a time for the load (`message_columns`), are the values
docs/graph.md documents, spelled out here a message at a time as they were first written."""

from __future__ import annotations

from graph_inputs import conversation, generated, read, write_inputs

from chatetl.graph.properties import (
    CONTENT_LIMIT,
    MESSAGE_PROPERTIES,
    message_columns,
    message_name,
    message_values,
)
from chatetl.readers import read_path
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import iso
from chatetl.samples import sample_uploads


def _values_as_defined(conv, m) -> tuple:
    text = m.text or ""
    prefix = f"{conv.conversation_id}:"
    name = f"msg-{conv.conversation_id[:12]}-{m.message_id[len(prefix):]}" if m.message_id.startswith(prefix) else f"msg-{m.message_id[:12]}"
    return (f"{conv.key}:{m.message_id}", m.message_id, name, m.role.value, m.kind.value, text[:CONTENT_LIMIT],
            len(text) > CONTENT_LIMIT, len(text), iso(m.created_at), conv.conversation_id, conv.platform,
            bool(m.tool_calls), bool(m.tool_results), m.model, m.seq, m.on_active_branch, *_attachments_as_defined(m))


def _attachments_as_defined(m) -> tuple:
    if not m.attachments:
        return None, None, None
    stored = [a.content_hash for a in m.attachments if a.content_hash is not None]
    return [a.name or a.kind for a in m.attachments], stored or None, len(m.attachments) - len(stored)


def test_message_columns_are_the_properties_as_defined(tmp_path):
    convs = [c for p in write_inputs(tmp_path / "inputs").values() for c in read(p)]
    for name, data in sample_uploads().items():
        path = tmp_path / name.replace("/", "_")
        path.write_bytes(data)
        convs += list(read_path(path, ReadReport()))
    convs += generated(12, 5)
    long = conversation(["x" * (CONTENT_LIMIT + 5), "short"], conv_id="long-one")
    derived = conversation(["q", "a"], conv_id="derived-ids-chat", ids=["derived-ids-chat:0", "derived-ids-chat:1"])
    convs += [long, derived]
    checked = 0
    for conv in convs:
        columns = message_columns(conv, conv.messages)
        assert len(columns) == len(MESSAGE_PROPERTIES)
        want = [_values_as_defined(conv, m) for m in conv.messages]
        assert [tuple(row) for row in zip(*columns)] == want
        assert [message_values(conv, m) for m in conv.messages] == want
        assert [message_name(conv, m) for m in conv.messages] == [w[2] for w in want]
        checked += len(want)
    assert checked > 100
    assert message_values(long, long.messages[0])[6] is True and message_values(long, long.messages[0])[7] == CONTENT_LIMIT + 5
    assert [message_name(derived, m) for m in derived.messages] == ["msg-derived-ids--0", "msg-derived-ids--1"]
