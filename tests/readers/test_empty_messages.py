"""Empty messages follow one rule whatever their role and reader (chatetl.readers.tree.turn_kind):
an empty user or assistant message is HIDDEN with extra["empty"], stays in the tree, is never
numbered nor sent out; an attachment alone is a turn; empty tool results stay tool results."""

from __future__ import annotations

import json

import pytest

from chatetl.model import MessageKind, Role
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.tree import turn_kind
from chatetl.samples import ChatGPTBuilder
from chatetl.selection import active_turns

SID = "22222222-3333-4444-8555-666666666666"


def chatgpt_file() -> tuple[str, bytes]:
    b = ChatGPTBuilder("empty", "Empty", 1_700_000_000.0)
    b.text("user", "first")
    b.text("assistant", "answer one")
    b.text("user", "   ")  # an empty user message
    b.text("assistant", "")  # an empty answer
    b.add("assistant", {"content_type": "code", "text": "print(1)"}, recipient="python")
    b.add("tool", {"content_type": "execution_output", "text": ""}, name="python")  # a tool that printed nothing
    b.text("user", "last")
    b.text("assistant", "answer two")
    return "conversations.json", json.dumps([b.build()]).encode()


def claude_code_file() -> tuple[str, bytes]:
    def line(ltype, uuid, parent, second, content, **kw):
        rec = {"type": ltype, "uuid": uuid, "parentUuid": parent, "sessionId": SID, "isSidechain": False,
               "timestamp": f"2025-06-01T10:00:{second:02d}.000Z", "message": {"role": ltype, "content": content}}
        if ltype == "assistant":
            rec["message"].update(model="claude-sonnet-4-5", id=f"msg_{uuid}")
        rec.update(kw)
        return rec

    lines = [
        line("user", "u1", None, 0, "first"),
        line("assistant", "a1", "u1", 1, [{"type": "text", "text": "answer one"}]),
        line("user", "u2", "a1", 2, "   "),
        line("assistant", "a2", "u2", 3, [{"type": "text", "text": ""}]),
        line("assistant", "a3", "a2", 4, [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "true"}}]),
        line("user", "r1", "a3", 5, [{"type": "tool_result", "tool_use_id": "toolu_1", "content": ""}]),
        line("user", "u3", "r1", 6, "last"),
        line("assistant", "a4", "u3", 7, [{"type": "text", "text": "answer two"}]),
    ]
    return f"projects/-w/{SID}.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode()


def sharegpt_file() -> tuple[str, bytes]:
    rec = {"id": "e1", "conversations": [
        {"from": "human", "value": "first"},
        {"from": "gpt", "value": "answer one"},
        {"from": "human", "value": "   "},
        {"from": "gpt", "value": ""},
        {"from": "function_call", "value": '{"name": "run", "arguments": {}}'},
        {"from": "observation", "value": ""},
        {"from": "human", "value": "last"},
        {"from": "gpt", "value": "answer two"},
    ]}
    return "data.json", json.dumps([rec]).encode()


@pytest.mark.parametrize("make", [chatgpt_file, claude_code_file, sharegpt_file], ids=["chatgpt", "claude-code", "sharegpt"])
def test_empty_user_and_assistant_messages_are_hidden_alike(make):
    name, data = make()
    report = ReadReport()
    [conv] = list(read_entry(Entry.from_bytes(name, data), report))
    assert report.errors == []
    branch = conv.active_branch
    empty = [m for m in branch if m.extra.get("empty")]
    assert [(m.role, m.kind) for m in empty] == [(Role.USER, MessageKind.HIDDEN), (Role.ASSISTANT, MessageKind.HIDDEN)]
    assert all(m.seq is None and m.on_active_branch for m in empty)  # kept on the branch, never numbered
    assert [m.text for m in conv.visible_turns] == ["first", "answer one", "last", "answer two"]
    assert [m.seq for m in conv.visible_turns] == [0, 1, 2, 3]
    # the tree runs through them: what followed still hangs from the empty messages
    by_id = {m.message_id: m for m in branch}
    assert by_id[branch[branch.index(empty[1]) + 1].parent_id] is empty[1]
    # an empty tool result is still the tool's answer
    [result] = [m for m in branch if m.kind is MessageKind.TOOL_RESULT]
    assert result.role is Role.TOOL and not result.extra.get("empty")
    # nothing empty goes out
    assert [t.text for t in active_turns(conv)] == ["first", "answer one", "last", "answer two"]


def test_the_rule_itself():
    extra: dict = {}
    assert turn_kind("hi", (), extra) is MessageKind.TURN and extra == {}
    assert turn_kind("", ["an image"], extra) is MessageKind.TURN and extra == {}
    assert turn_kind(" \n\t", (), extra) is MessageKind.HIDDEN and extra == {"empty": True}
    assert turn_kind("", (), {}) is MessageKind.HIDDEN
