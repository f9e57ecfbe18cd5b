"""Generated inputs for the graph tests: one small export per source format, read through the
real readers, with what a person saw in each written down beside it; plus model builders for
resync scenarios and a canonical dump of the graph. Never real people's data."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chatetl.model import (
    Conversation,
    Message,
    MessageKind,
    Role,
    Source,
    ToolCall,
    ToolResult,
)
from chatetl.readers import ReadReport, read_path
from chatetl.readers.tree import resolve_branches
from chatetl.samples import chatgpt_export
from chatetl.samples.common import sample_id

LONG_PASTE = "Summarize this, please: " + " ".join(f"word{i}" for i in range(600))  # > 2,000 characters

ROOT = "00000000-0000-4000-8000-000000000000"
CLAUDE_WEATHER = "c1a0de00-0000-4000-8000-00000000000a"
CLAUDE_LONG = "c1a0de00-0000-4000-8000-00000000000b"
GROK_CHAT = "1844674407370955161"
SHAREGPT_ID = "sg-units-1"
REX_ID = "abc123de-4567-89ab-cdef-0123456789ab"
CODE_SESSION = "11111111-2222-4333-8444-555555555555"
TRAM = sample_id("tram")  # the untitled conversation of chatetl.samples


# ----------------------------------------------------------------------------- Claude.ai


def _claude_msg(mid: str, sender: str, content: list[dict[str, Any]], parent: str, t: str) -> dict[str, Any]:
    text = "\n\n".join(b["text"] for b in content if b.get("type") == "text")
    return {"uuid": mid, "text": text, "sender": sender, "created_at": t, "updated_at": t, "attachments": [], "files": [],
            "parent_message_uuid": parent, "content": content}


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t, "citations": []}


def claude_ai_export() -> bytes:
    weather = {
        "uuid": CLAUDE_WEATHER, "name": "Weather in Oslo", "summary": "", "created_at": "2025-03-01T09:00:00.000000Z",
        "updated_at": "2025-03-01T09:05:00.000000Z", "account": {"uuid": "acct-test"},
        "chat_messages": [
            _claude_msg("cw-h1", "human", [_text("What's the weather in Oslo, in Fahrenheit?")], ROOT, "2025-03-01T09:00:00Z"),
            # an older answer the user regenerated: an abandoned branch
            _claude_msg("cw-a0", "assistant", [_text("I cannot look that up.")], "cw-h1", "2025-03-01T09:00:10Z"),
            _claude_msg("cw-a1", "assistant", [
                {"type": "thinking", "thinking": "Search first, then convert.", "summaries": []},
                _text("Let me look that up."),
                {"type": "tool_use", "id": "toolu_01", "name": "web_search", "input": {"query": "Oslo weather now"}},
                {"type": "tool_result", "tool_use_id": "toolu_01", "name": "web_search",
                 "content": [{"type": "text", "text": "Oslo: 4 °C, cloudy"}], "is_error": False},
                {"type": "tool_use", "id": "toolu_02", "name": "repl", "input": {"code": "4 * 9 / 5 + 32"}},
                {"type": "tool_result", "tool_use_id": "toolu_02", "name": "repl",
                 "content": [{"type": "text", "text": "39.2"}], "is_error": False},
                _text("It is 39.2 °F and cloudy in Oslo."),
            ], "cw-h1", "2025-03-01T09:01:00Z"),
            _claude_msg("cw-h2", "human", [_text("Thanks!")], "cw-a1", "2025-03-01T09:04:00Z"),
            _claude_msg("cw-a2", "assistant", [_text("You're welcome.")], "cw-h2", "2025-03-01T09:05:00Z"),
        ],
    }
    long = {
        "uuid": CLAUDE_LONG, "name": "", "summary": "", "created_at": "2025-03-02T10:00:00.000000Z",
        "updated_at": "2025-03-02T10:01:00.000000Z", "account": {"uuid": "acct-test"},
        "chat_messages": [
            _claude_msg("cl-h1", "human", [_text(LONG_PASTE)], ROOT, "2025-03-02T10:00:00Z"),
            _claude_msg("cl-a1", "assistant", [_text("It is a numbered list of words.")], "cl-h1", "2025-03-02T10:01:00Z"),
        ],
    }
    return json.dumps([weather, long]).encode()


# ----------------------------------------------------------------------------- chat-export (a Grok chat)


def grok_chat_export() -> bytes:
    return json.dumps({
        "schema": "chat-export/1", "platform": "grok", "url": f"https://grok.com/chat/{GROK_CHAT}",
        "title": "Meteorite facts", "exported_at": "2025-04-01T12:00:00.000Z", "chat_id": GROK_CHAT, "model": "grok-3",
        "messages": [
            {"role": "user", "role_tag": "user", "text": "How big was the Hoba meteorite?"},
            {"role": "assistant", "role_tag": "grok", "text": "About 60 tonnes: the largest known meteorite."},
            {"role": "user", "role_tag": "user", "text": "Where is it?"},
            {"role": "assistant", "role_tag": "grok", "text": "In Namibia, where it fell."},
        ],
    }).encode()


# ----------------------------------------------------------------------------- ShareGPT


def sharegpt_dataset() -> bytes:
    return json.dumps([{
        "id": SHAREGPT_ID,
        "conversations": [
            {"from": "human", "value": "Convert 5 km to miles for my kilometre log."},
            {"from": "function_call", "value": '{"name": "convert", "arguments": {"value": 5, "from": "km", "to": "mi"}}'},
            {"from": "observation", "value": '{"result": 3.11}'},
            {"from": "gpt", "value": "5 km is about 3.11 miles."},
            {"from": "human", "value": "And 10 km?"},
            {"from": "function_call", "value": '{"name": "convert", "arguments": {"value": 10, "from": "km", "to": "mi"}}'},
            {"from": "observation", "value": '{"result": 6.21}'},
            {"from": "gpt", "value": "10 km is about 6.21 miles."},
        ],
    }]).encode()


def _sharegpt_conversation_id() -> str:
    """The dataset's id as the reader keys it (dataset ids are not platform ids: a content digest is added)."""
    from chatetl.readers import Entry, ReadReport, read_entry

    [conv] = read_entry(Entry.from_bytes("dataset.json", sharegpt_dataset()), ReadReport())
    assert conv.meta["dataset_id"] == SHAREGPT_ID
    return conv.conversation_id


SHAREGPT_CONV_ID = _sharegpt_conversation_id()


# ----------------------------------------------------------------------------- REX (a ChatGPT chat)


def _rex_when(minute: int) -> str:
    return f"2026-04-15T14:{minute:02d}:00Z"


def _rex_turn(tid: str, speaker: str, minute: int, text: str, parent: str, children: list[str]) -> dict[str, Any]:
    epoch = datetime(2026, 4, 15, 14, minute, tzinfo=UTC).timestamp()
    meta = {"parent_id": parent} if parent != "client-created-root" else {}
    if speaker == "assistant":
        meta["model_slug"] = "gpt-4o"
    return {
        "speaker": speaker, "when": _rex_when(minute), "identifier": tid, "content*": text, "parent": parent,
        "metadata*": {
            "id": tid,
            "message": {"id": tid, "author": {"role": speaker, "name": None, "metadata": {}}, "create_time": epoch,
                        "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully",
                        "end_turn": True, "weight": 1.0, "metadata": meta, "recipient": "all", "channel": None},
            "parent": parent, "children": children,
        },
    }


def rex_record(ident: str = REX_ID, title: str = "Red Line service check", turns: list[tuple[str, str, str]] | None = None,
               start_minute: int = 1) -> dict[str, Any]:
    """A full-level `rex-conversation` record; turns are (identifier, speaker, text), a minute apart."""
    turns = turns or [
        ("rx-u1", "user", "Is the CTA Red Line running normally today?"),
        ("rx-a1", "assistant", "Yes, normal service on the Red Line."),
    ]
    rows = []
    parent = "client-created-root"
    for i, (tid, speaker, text) in enumerate(turns):
        nxt = [turns[i + 1][0]] if i + 1 < len(turns) else []
        rows.append(_rex_turn(tid, speaker, start_minute + i, text, parent, nxt))
        parent = tid
    return {
        "name": "rex-conversation", "date": _rex_when(start_minute), "platform": "chatgpt", "identifier": ident,
        "title*": title, "started": _rex_when(start_minute), "ended": _rex_when(start_minute + len(turns)), "turns": rows,
        "passive-data-metadata": {"source": "participant-test", "group": "group-a", "generator": "rex-conversation: Test/1.0",
                                  "generator-id": "rex-conversation", "timestamp": 0, "timezone": "America/Chicago",
                                  "configuration-hash": "0000", "encrypted_transmission": False},
    }


# ----------------------------------------------------------------------------- Claude Code


def _code_line(ltype: str, uid: str, parent: str | None, second: int, content: Any, **kw: Any) -> dict[str, Any]:
    rec = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/w/proj", "sessionId": CODE_SESSION,
           "version": "2.0.0", "gitBranch": "main", "type": ltype, "uuid": uid, "timestamp": f"2025-06-01T10:00:{second:02d}.000Z"}
    if ltype == "assistant":
        rec["message"] = {"model": "claude-sonnet-4-5", "id": f"msg_{uid}", "type": "message", "role": "assistant",
                          "content": content, "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    else:
        rec["message"] = {"role": "user", "content": content}
    rec.update(kw)
    return rec


def claude_code_session() -> bytes:
    lines = [
        _code_line("user", "u1", None, 0, "Check that pyproject.toml pins pytest"),
        _code_line("assistant", "a1", "u1", 1, [
            {"type": "text", "text": "Reading the file."},
            {"type": "tool_use", "id": "toolu_A", "name": "Read", "input": {"file_path": "/w/proj/pyproject.toml"}},
        ]),
        _code_line("user", "r1", "a1", 2, [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "pytest==9.2.0"}]),
        _code_line("assistant", "a2", "r1", 3, [
            {"type": "tool_use", "id": "toolu_B", "name": "Bash", "input": {"command": "pytest -q"}},
        ]),
        _code_line("user", "r2", "a2", 4, [{"type": "tool_result", "tool_use_id": "toolu_B", "content": "3 passed", "is_error": False}]),
        _code_line("assistant", "a3", "r2", 5, [{"type": "text", "text": "pytest is pinned and all 3 tests pass."}]),
    ]
    return "".join(json.dumps(rec) + "\n" for rec in lines).encode()


# ----------------------------------------------------------------------------- every source


# per source: platform, conversation id (absent: look it up by name), name, a search term only its
# Document holds, the tools it used, the visible turns of the active branch (role, text)
EXPECTED: dict[str, list[dict[str, Any]]] = {
    "chatgpt": [
        {"platform": "chatgpt", "name": "Planning a rail trip", "search": "legroom", "turns": [
            ("user", "Which is faster from Vienna to Zagreb: train or bus?"),
            ("assistant", "The direct train takes about 6.5 hours; the bus is usually 5 hours."),
            ("user", "Book-keeping aside, which is more comfortable?"),
            ("assistant", "The train: more legroom, a dining car and you can walk around."),
        ]},
        {"platform": "chatgpt", "name": "Mean of a list", "search": "mean of 3, 5, 10", "tools": ["python"], "turns": [
            ("user", "What is the mean of 3, 5, 10?"),
            ("assistant", "The mean is **6**.\n\n```python\nsum([3, 5, 10]) / 3  # 6.0\n```"),
        ]},
        {"platform": "chatgpt", "id": TRAM, "name": "Untitled", "search": "low-floor tram", "tools": ["browser"], "turns": [
            ("user", "What tram is this?"),
            ("assistant", "It looks like a ULF low-floor tram  used in Vienna."),
        ]},
    ],
    "claude-ai": [
        {"platform": "claude-ai", "id": CLAUDE_WEATHER, "name": "Weather in Oslo", "search": "cloudy in Oslo",
         "tools": ["web_search", "repl"], "turns": [
            ("user", "What's the weather in Oslo, in Fahrenheit?"),
            ("assistant", "Let me look that up.\n\nIt is 39.2 °F and cloudy in Oslo."),
            ("user", "Thanks!"),
            ("assistant", "You're welcome."),
        ]},
        {"platform": "claude-ai", "id": CLAUDE_LONG, "name": "Untitled", "search": "numbered list of words", "turns": [
            ("user", LONG_PASTE),
            ("assistant", "It is a numbered list of words."),
        ]},
    ],
    "chat-export": [
        {"platform": "grok", "id": GROK_CHAT, "name": "Meteorite facts", "search": "Hoba meteorite", "turns": [
            ("user", "How big was the Hoba meteorite?"),
            ("assistant", "About 60 tonnes: the largest known meteorite."),
            ("user", "Where is it?"),
            ("assistant", "In Namibia, where it fell."),
        ]},
    ],
    "sharegpt": [
        {"platform": "unknown", "id": SHAREGPT_CONV_ID, "name": "Untitled", "search": "kilometre log", "tools": ["convert"], "turns": [
            ("user", "Convert 5 km to miles for my kilometre log."),
            ("assistant", "5 km is about 3.11 miles."),
            ("user", "And 10 km?"),
            ("assistant", "10 km is about 6.21 miles."),
        ]},
    ],
    "rex": [
        {"platform": "chatgpt", "id": REX_ID, "name": "Red Line service check", "search": "CTA Red Line", "turns": [
            ("user", "Is the CTA Red Line running normally today?"),
            ("assistant", "Yes, normal service on the Red Line."),
        ]},
    ],
    "claude-code": [
        {"platform": "claude-code", "id": CODE_SESSION, "name": "Check that pyproject.toml pins pytest", "search": "pins pytest",
         "tools": ["Read", "Bash"], "turns": [
            ("user", "Check that pyproject.toml pins pytest"),
            ("assistant", "Reading the file."),
            ("assistant", "pytest is pinned and all 3 tests pass."),
        ]},
    ],
}


def write_inputs(folder: Path) -> dict[str, Path]:
    """One input file per source format; returns source -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    code_dir = folder / "claude-code" / "-w-proj"
    code_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "chatgpt": (folder / "chatgpt-export.zip", chatgpt_export()),
        "claude-ai": (folder / "claude" / "conversations.json", claude_ai_export()),
        "chat-export": (folder / "grok-meteorite.json", grok_chat_export()),
        "sharegpt": (folder / "sharegpt-units.json", sharegpt_dataset()),
        "rex": (folder / "rex.json", json.dumps([rex_record()]).encode()),
        "claude-code": (code_dir / f"{CODE_SESSION}.jsonl", claude_code_session()),
    }
    for path, data in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return {source: path for source, (path, _) in files.items()}


def read(path: Path) -> list[Conversation]:
    report = ReadReport()
    convs = list(read_path(path, report))
    assert report.errors == [], [str(e) for e in report.errors]
    return convs


# ----------------------------------------------------------------------------- model builders


T0 = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)


def conversation(
    turns: list[str],
    *,
    conv_id: str = "conv-1",
    platform: str = "chatgpt",
    source: Source = Source.CHATGPT,
    updated: datetime | None = None,
    ids: list[str] | None = None,
    branch_after: int | None = None,
    title: str | None = "A chat",
    source_file: str | None = None,
    tool_after: int | None = None,
) -> Conversation:
    """A linear chat of alternating user/assistant turns, optionally with an abandoned answer
    branching off turn `branch_after` and a tool call + result after turn `tool_after`."""
    ids = ids or [f"m{i}" for i in range(len(turns))]
    messages: list[Message] = []
    parent = None
    for i, (mid, text) in enumerate(zip(ids, turns)):
        messages.append(Message(message_id=mid, parent_id=parent, role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
                                text=text, created_at=T0 + timedelta(minutes=i)))
        parent = mid
        if tool_after == i:
            call, result = f"{mid}-call", f"{mid}-result"
            messages.append(Message(message_id=call, parent_id=parent, role=Role.ASSISTANT, kind=MessageKind.TOOL_CALL, text="1+1",
                                    tool_calls=[ToolCall(id=call, name="python", input="1+1")], created_at=T0 + timedelta(minutes=i, seconds=10)))
            messages.append(Message(message_id=result, parent_id=call, role=Role.TOOL, kind=MessageKind.TOOL_RESULT, text="2",
                                    tool_results=[ToolResult(tool_call_id=call, name="python", output="2")], created_at=T0 + timedelta(minutes=i, seconds=20)))
            parent = result
    if branch_after is not None:
        messages.append(Message(message_id=f"{ids[branch_after]}-alt", parent_id=ids[branch_after], role=Role.ASSISTANT,
                                text="An answer the user regenerated.", created_at=T0 - timedelta(minutes=1)))
    conv = Conversation(source=source, platform=platform, conversation_id=conv_id, title=title, created_at=T0,
                        updated_at=updated or T0 + timedelta(minutes=len(turns)), messages=messages,
                        source_file=source_file or f"{source.value}-file.json", current_node=parent)
    resolve_branches(conv)
    return conv


def generated(conversations: int, turns: int, *, version: int = 0, platform: str = "chatgpt") -> list[Conversation]:
    """Many deterministic chats (every third with a tool call, every fifth with an abandoned
    answer); `version` shifts their update time and rewrites their last turn (a resync)."""
    return [
        conversation(
            [f"turn {t} of chat {i}" + (f" (v{version})" if version and t == turns - 1 else "") for t in range(turns)],
            conv_id=f"gen-{i:05d}",
            platform=platform,
            updated=T0 + timedelta(days=i % 7, hours=version),
            tool_after=1 if i % 3 == 0 else None,
            branch_after=2 if i % 5 == 0 else None,
            title=f"Generated chat {i}",
            source_file="generated.json",
        )
        for i in range(conversations)
    ]


# ----------------------------------------------------------------------------- the graph, canonically


def graph_dump(driver: Any, database: str | None = None, ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every node (label, identity, properties but `ignore`) and relationship (type, ends,
    properties), sorted: two graphs with equal dumps are the same graph, whatever the internal ids."""
    nodes, _, _ = driver.execute_query(
        "MATCH (n) RETURN labels(n) AS labels, properties(n) AS props", database_=database
    )
    rels, _, _ = driver.execute_query(
        """
        MATCH (a)-[r]->(b)
        RETURN type(r) AS type, labels(a)[0] AS a_label, coalesce(a.key, a.id) AS a_key,
               labels(b)[0] AS b_label, coalesce(b.key, b.id) AS b_key, properties(r) AS props
        """,
        database_=database,
    )

    def canon(value: Any) -> str:
        return json.dumps(value, sort_keys=True, default=str)

    return {
        "nodes": sorted(canon([sorted(r["labels"]), {k: v for k, v in r["props"].items() if k not in ignore}]) for r in nodes),
        "relationships": sorted(canon([r["type"], r["a_label"], r["a_key"], r["b_label"], r["b_key"], r["props"]]) for r in rels),
    }


def wipe(driver: Any, database: str | None = None) -> None:
    """Empty the graph (the test services' database is the suite's own)."""
    with driver.session(database=database) as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
