"""Claude.ai account export reader: array, JSONL, single object and zip forms; trees, blocks, damage;
older exports (time order, inline thinking and artifacts); 2026 downloads (a manifest naming zips)."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime

from chatetl.model import MessageKind, Role, Source
from chatetl.readers import ReadReport, read_entry, read_path
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.registry import READERS

ROOT = "00000000-0000-4000-8000-000000000000"


def msg(uuid, sender, text="", *, content=None, parent=ROOT, t="2024-05-01T10:00:00.000000Z", **kw):
    m = {"uuid": uuid, "text": text, "sender": sender, "created_at": t, "updated_at": t,
         "attachments": [], "files": [], "parent_message_uuid": parent}
    if content is not None:
        m["content"] = content
    m.update(kw)
    return m


def conv(uuid, messages, name="A chat", **kw):
    c = {"uuid": uuid, "name": name, "summary": "", "created_at": "2024-05-01T10:00:00.123456Z",
         "updated_at": "2024-05-01T11:00:00.654321Z", "account": {"uuid": "acct-1"}, "chat_messages": messages}
    c.update(kw)
    return c


def block_text(text, citations=None):
    return {"start_timestamp": None, "stop_timestamp": None, "flags": None, "type": "text", "text": text,
            "citations": citations or []}


def simple_pair(cid, question="Hello?", answer="Hi there."):
    return conv(cid, [
        msg(f"{cid}-h", "human", question, content=[block_text(question)]),
        msg(f"{cid}-a", "assistant", answer, content=[block_text(answer)], parent=f"{cid}-h", t="2024-05-01T10:00:05.000000Z"),
    ])


def read_file(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    report = ReadReport()
    return list(read_path(p, report)), report


def by_id(c):
    return {m.message_id: m for m in c.messages}


# --- forms ------------------------------------------------------------------------------------

def test_array_form_reads_every_conversation_with_its_fields(tmp_path):
    c2 = simple_pair("c2")
    c2["name"] = ""
    c2["summary"] = "A short chat about greetings."
    convs, report = read_file(tmp_path, "conversations.json", json.dumps([simple_pair("c1"), c2]))
    assert report.errors == []
    assert report.formats["claude-ai"] == 1
    assert [c.conversation_id for c in convs] == ["c1", "c2"]
    c1 = convs[0]
    assert c1.source is Source.CLAUDE_AI and c1.platform == "claude-ai"
    assert c1.title == "A chat" and convs[1].title is None  # name "" is no title
    assert c1.url == "https://claude.ai/chat/c1"
    assert c1.model is None
    assert c1.created_at == datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
    assert c1.updated_at == datetime(2024, 5, 1, 11, 0, 0, 654321, tzinfo=UTC)
    assert c1.meta == {"account_uuid": "acct-1"}
    assert convs[1].meta["summary"] == "A short chat about greetings."
    assert [(m.role, m.kind, m.text, m.seq) for m in c1.visible_turns] == [
        (Role.USER, MessageKind.TURN, "Hello?", 0), (Role.ASSISTANT, MessageKind.TURN, "Hi there.", 1)]
    assert c1.messages[0].parent_id is None  # the nil-UUID root parent
    assert c1.source_file.endswith("conversations.json")
    assert report.conversations == 2 and report.messages == 4


def test_jsonl_form_as_the_seed_documents(tmp_path):
    lines = "\n".join(json.dumps(simple_pair(f"c{i}")) for i in range(3)) + "\n"
    assert detect(Entry.from_bytes("conversations.jsonl", lines.encode())) == (Format.CLAUDE_AI, Shape.JSONL)
    convs, report = read_file(tmp_path, "conversations.jsonl", lines)
    assert report.errors == []
    assert [c.conversation_id for c in convs] == ["c0", "c1", "c2"]
    assert all(c.message_count == 2 for c in convs)


def test_jsonl_whose_first_line_is_longer_than_the_detection_head(tmp_path):
    big = simple_pair("big", question="x" * 100_000)
    lines = json.dumps(big) + "\n" + json.dumps(simple_pair("small")) + "\n"
    convs, report = read_file(tmp_path, "conversations.jsonl", lines)
    assert report.errors == []
    assert [c.conversation_id for c in convs] == ["big", "small"]
    assert len(convs[0].visible_turns[0].text) == 100_000


def test_single_conversation_object(tmp_path):
    convs, report = read_file(tmp_path, "one.json", json.dumps(simple_pair("solo"), indent=2))
    assert report.errors == []
    assert len(convs) == 1 and convs[0].conversation_id == "solo"
    assert [m.text for m in convs[0].visible_turns] == ["Hello?", "Hi there."]


def test_zip_with_sidecars_yields_conversations_and_skips_the_rest(tmp_path):
    users = [{"uuid": "user-1", "full_name": "Test Person", "email_address": "t@example.invalid", "verified_phone_number": None}]
    projects = [{"uuid": "proj-1", "name": "P", "description": "", "is_private": True, "is_starter_project": False,
                 "prompt_template": "", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
                 "creator": {"uuid": "user-1", "full_name": "Test Person"},
                 "docs": [{"uuid": "doc-1", "filename": "notes.md", "content": "# notes", "created_at": "2024-01-01T00:00:00Z"}]}]
    memories = {"conversations_memory": "Likes tea.", "project_memories": {"proj-1": "Uses Python."}, "account_uuid": "acct-1"}
    zpath = tmp_path / "data-export.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("conversations.json", json.dumps([simple_pair("z1"), simple_pair("z2")]))
        zf.writestr("users.json", json.dumps(users))
        zf.writestr("projects.json", json.dumps(projects))
        zf.writestr("memories.json", json.dumps(memories))
    report = ReadReport()
    convs = list(read_path(zpath, report))
    assert report.errors == []
    assert [c.conversation_id for c in convs] == ["z1", "z2"]
    assert convs[0].source_file == f"{zpath}!conversations.json"
    assert report.skipped["claude-ai-sidecar file"] == 3
    assert report.files == 1


def test_sidecar_shapes_are_detected_as_sidecars():
    project = {"uuid": "proj-1", "name": "P", "description": "d", "is_private": False, "is_starter_project": False,
               "prompt_template": "Be brief.", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
               "docs": []}
    cases = {
        "projects.json": [project, dict(project, uuid="proj-2")],  # an array of project objects
        "proj-1.json": project,  # one file per project
        "memories.json": {"conversations_memory": "m", "project_memories": {}},  # an object, not an array
        "users.json": [{"uuid": "u", "full_name": "N", "email_address": "e@example.invalid"}],
    }
    for name, value in cases.items():
        fmt, _layout = detect(Entry.from_bytes(name, json.dumps(value).encode()))
        assert fmt is Format.CLAUDE_AI_SIDECAR, name


# --- the tree -----------------------------------------------------------------------------------

def test_retry_siblings_later_one_active_both_kept(tmp_path):
    c = conv("tree", [
        msg("h1", "human", "Write a haiku", content=[block_text("Write a haiku")]),
        msg("a1", "assistant", "First try", content=[block_text("First try")], parent="h1", t="2024-05-01T10:00:05.000000Z"),
        msg("a2", "assistant", "Second try", content=[block_text("Second try")], parent="h1", t="2024-05-01T10:01:00.000000Z"),
        msg("h2", "human", "Thanks", content=[block_text("Thanks")], parent="a2", t="2024-05-01T10:02:00.000000Z"),
        msg("a3", "assistant", "You're welcome", content=[block_text("You're welcome")], parent="h2", t="2024-05-01T10:02:05.000000Z"),
    ])
    convs, report = read_file(tmp_path, "conversations.json", json.dumps([c]))
    assert report.errors == []
    (c,) = convs
    assert {m.message_id for m in c.messages} == {"h1", "a1", "a2", "h2", "a3"}  # the retried answer is kept
    assert [m.message_id for m in c.active_branch] == ["h1", "a2", "h2", "a3"]
    assert [m.seq for m in c.active_branch] == [0, 1, 2, 3]  # gapless
    a1 = by_id(c)["a1"]
    assert a1.on_active_branch is False and a1.seq is None and a1.parent_id == "h1"
    assert c.current_node == "a3"


def test_latest_retry_wins_when_it_is_the_leaf(tmp_path):
    c = conv("retry", [
        msg("h1", "human", "Q", content=[block_text("Q")]),
        msg("a1", "assistant", "old", content=[block_text("old")], parent="h1", t="2024-05-01T10:00:05.000000Z"),
        msg("a2", "assistant", "new", content=[block_text("new")], parent="h1", t="2024-05-01T10:03:00.000000Z"),
    ])
    (c,), _ = read_file(tmp_path, "c.json", json.dumps([c]))
    assert [m.text for m in c.visible_turns] == ["Q", "new"]


def test_current_leaf_message_uuid_of_the_api_shape_is_the_active_leaf(tmp_path):
    c = conv("api", [
        msg("h1", "human", "Q", content=[block_text("Q")]),
        msg("a1", "assistant", "chosen", content=[block_text("chosen")], parent="h1", t="2024-05-01T10:00:05.000000Z"),
        msg("a2", "assistant", "later", content=[block_text("later")], parent="h1", t="2024-05-01T10:03:00.000000Z"),
    ], current_leaf_message_uuid="a1", model="claude-sonnet-4-5-20250929")
    (c,), report = read_file(tmp_path, "c.json", json.dumps(c))
    assert report.errors == [] and report.drift == {}
    assert [m.text for m in c.visible_turns] == ["Q", "chosen"]
    assert c.model == "claude-sonnet-4-5-20250929"


def test_old_export_text_only_without_parents_is_chained_in_array_order(tmp_path):
    old = {"uuid": "old", "name": "Old", "created_at": "2023-03-01T09:00:00.000000Z", "updated_at": "2023-03-01T09:10:00.000000Z",
           "account": {"uuid": "acct-1"}, "chat_messages": [
               {"uuid": "m1", "text": "First question", "sender": "human", "created_at": "2023-03-01T09:00:00.000000Z", "attachments": [], "files": []},
               {"uuid": "m2", "text": "First answer", "sender": "assistant", "created_at": "2023-03-01T09:00:00.000000Z", "attachments": [], "files": []},
               {"uuid": "m3", "text": "Second question", "sender": "human", "created_at": "2023-03-01T09:00:00.000000Z", "attachments": [], "files": []},
               {"uuid": "m4", "text": "Second answer", "sender": "assistant", "created_at": "2023-03-01T09:00:00.000000Z", "attachments": [], "files": []},
           ]}
    (c,), report = read_file(tmp_path, "conversations.json", json.dumps([old]))
    assert report.errors == []
    assert [m.parent_id for m in c.messages] == [None, "m1", "m2", "m3"]
    assert [(m.text, m.seq) for m in c.visible_turns] == [
        ("First question", 0), ("First answer", 1), ("Second question", 2), ("Second answer", 3)]
    assert all(m.content_type == "text" for m in c.messages)


# --- content blocks -------------------------------------------------------------------------------

def test_empty_text_field_with_content_blocks(tmp_path):
    c = conv("blocks", [
        msg("h", "human", "", content=[block_text("Question in a block")]),
        msg("a", "assistant", "", content=[block_text("Part one."), block_text("Part two.")], parent="h"),
    ])
    (c,), _ = read_file(tmp_path, "c.json", json.dumps([c]))
    assert [m.text for m in c.visible_turns] == ["Question in a block", "Part one.\n\nPart two."]


def test_thinking_blocks_become_reasoning(tmp_path):
    c = conv("think", [
        msg("h", "human", "Why?", content=[block_text("Why?")]),
        msg("a", "assistant", "", parent="h", content=[
            {"type": "thinking", "thinking": "First thought.", "summaries": [{"summary": "Thinking about why"}], "cut_off": False},
            {"type": "thinking", "thinking": "Second thought.", "summaries": []},
            block_text("Because."),
        ]),
        msg("h2", "human", "Hm", content=[block_text("Hm")], parent="a"),
        msg("a2", "assistant", "", parent="h2", content=[{"type": "thinking", "thinking": "Only thinking here.", "summaries": []}]),
    ])
    (c,), report = read_file(tmp_path, "c.json", json.dumps([c]))
    m = by_id(c)
    assert m["a"].kind is MessageKind.TURN and m["a"].text == "Because."
    assert m["a"].reasoning == "First thought.\n\nSecond thought."
    assert m["a"].extra["thinking_summaries"] == ["Thinking about why"]
    assert m["a"].content_type == "thinking,text"
    assert m["a2"].kind is MessageKind.REASONING and m["a2"].text == "Only thinking here."
    assert report.drift == {}


def test_tool_use_and_results_pair_by_id_even_out_of_order(tmp_path):
    knowledge = [
        {"type": "knowledge", "title": "Tea - Example Wiki", "url": "https://wiki.example.org/tea", "text": "Tea is a drink.",
         "is_citable": True, "metadata": {"type": "webpage_metadata", "site_domain": "wiki.example.org", "site_name": "Example Wiki"}},
        {"type": "knowledge", "title": "No domain", "url": "https://news.example.com/x", "text": "News.", "metadata": {}},
    ]
    c = conv("tools", [
        msg("h", "human", "Find tea facts and make a doc", content=[block_text("Find tea facts and make a doc")]),
        msg("a", "assistant", "", parent="h", content=[
            block_text("Let me look that up."),
            {"type": "tool_use", "id": "toolu_search", "name": "web_search", "input": {"query": "tea"}, "message": "Searching"},
            {"type": "tool_use", "id": "toolu_art", "name": "artifacts",
             "input": {"id": "tea-doc", "type": "text/markdown", "title": "Tea notes", "command": "create", "content": "# Tea"}},
            {"type": "tool_result", "tool_use_id": "toolu_art", "name": "artifacts", "is_error": False, "content": [{"type": "text", "text": "OK"}]},
            {"type": "tool_result", "tool_use_id": "toolu_search", "name": "web_search", "is_error": False, "content": knowledge},
            block_text("Done."),
        ]),
        msg("a2", "assistant", "", parent="a", content=[
            {"type": "tool_use", "id": "toolu_late", "name": "web_fetch", "input": {"url": "https://wiki.example.org/tea"}}]),
        msg("r2", "assistant", "", parent="a2", content=[
            {"type": "tool_result", "tool_use_id": "toolu_late", "name": "web_fetch", "is_error": True, "content": "fetch failed"}]),
    ])
    (c,), report = read_file(tmp_path, "c.json", json.dumps([c]))
    assert report.errors == []
    m = by_id(c)
    a = m["a"]
    assert a.kind is MessageKind.TURN and a.text == "Let me look that up.\n\nDone."
    assert [(t.id, t.name) for t in a.tool_calls] == [("toolu_search", "web_search"), ("toolu_art", "artifacts")]
    assert [r.tool_call_id for r in a.tool_results] == ["toolu_art", "toolu_search"]  # as they came
    calls = {t.id: t for t in a.tool_calls}
    results = {r.tool_call_id: r for r in a.tool_results}
    assert set(calls) == set(results)
    assert results["toolu_search"].name == calls["toolu_search"].name == "web_search"
    art = json.loads(calls["toolu_art"].input)
    assert art["title"] == "Tea notes" and art["content"] == "# Tea"
    assert json.loads(calls["toolu_search"].input) == {"query": "tea"}
    assert results["toolu_art"].output == "OK"
    assert "Tea is a drink." in results["toolu_search"].output
    assert [(ci.title, ci.url, ci.snippet, ci.source) for ci in a.citations] == [
        ("Tea - Example Wiki", "https://wiki.example.org/tea", "Tea is a drink.", "wiki.example.org"),
        ("No domain", "https://news.example.com/x", "News.", "news.example.com"),
    ]
    assert m["a2"].kind is MessageKind.TOOL_CALL and m["a2"].role is Role.ASSISTANT
    assert m["r2"].kind is MessageKind.TOOL_RESULT and m["r2"].role is Role.TOOL
    assert m["r2"].tool_results[0].tool_call_id == m["a2"].tool_calls[0].id == "toolu_late"
    assert m["r2"].tool_results[0].is_error is True and m["r2"].text == "fetch failed"
    assert [x.message_id for x in c.visible_turns] == ["h", "a"]


def test_text_block_citations(tmp_path):
    cites = [{"uuid": "c-1", "start_index": 0, "end_index": 5, "details": {"type": "web_search_citation", "url": "https://a.example.net/p"}},
             {"start": 6, "end": 9, "url": "https://b.example.net/q", "title": "B page"}]
    c = conv("cite", [msg("h", "human", "Q", content=[block_text("Q")]),
                      msg("a", "assistant", "", parent="h", content=[block_text("Cited text.", citations=cites)])])
    (c,), _ = read_file(tmp_path, "c.json", json.dumps([c]))
    a = by_id(c)["a"]
    assert [(x.url, x.title, x.source) for x in a.citations] == [
        ("https://a.example.net/p", None, "a.example.net"), ("https://b.example.net/q", "B page", "b.example.net")]


def test_attachments_keep_extracted_text_and_files(tmp_path):
    c = conv("att", [
        msg("h", "human", "See file", content=[block_text("See file")],
            attachments=[{"file_name": "notes.txt", "file_size": 42, "file_type": "txt", "extracted_content": "line one\nline two"}],
            files=[{"file_uuid": "f-1", "file_name": "photo.png"}]),
        msg("h2", "human", "", content=[], parent="h", files=[{"file_uuid": "f-2", "file_name": "chart.png"}]),
    ])
    (c,), _ = read_file(tmp_path, "c.json", json.dumps([c]))
    h = by_id(c)["h"]
    assert [(x.name, x.size, x.mime_type, x.text) for x in h.attachments] == [
        ("notes.txt", 42, "txt", "line one\nline two"), ("photo.png", None, None, None)]
    assert h.attachments[1].id == "f-1"
    h2 = by_id(c)["h2"]
    assert h2.kind is MessageKind.TURN and h2.text == "" and h2.attachments[0].name == "chart.png"  # sent a file, no words


def test_unknown_block_is_drift_kept_raw_and_not_visible(tmp_path):
    injected = {"type": "injected_prompt_block", "text": "SECRET INSTRUCTIONS " * 100, "flags": None}
    c = conv("drift", [
        msg("h", "human", "", content=[injected, block_text("Real question")]),
        msg("a", "assistant", "Answer", content=[block_text("Answer")], parent="h", new_message_field=1),
    ], brand_new_field={"x": 1})
    (c,), report = read_file(tmp_path, "c.json", json.dumps([c]))
    assert report.errors == []
    h = by_id(c)["h"]
    assert h.text == "Real question" and "SECRET" not in h.text
    assert h.extra["unknown_blocks"] == [injected]
    assert report.drift["claude-ai.block:injected_prompt_block"] == 1
    assert report.drift["claude-ai.message_field:new_message_field"] == 1
    assert report.drift["claude-ai.conversation_field:brand_new_field"] == 1
    assert by_id(c)["a"].extra["new_message_field"] == 1
    assert c.meta["brand_new_field"] == {"x": 1}


def test_direct_reader_call_with_layout(tmp_path):
    data = json.dumps([simple_pair("d1")]).encode()
    report = ReadReport()
    convs = list(READERS[Format.CLAUDE_AI].conversations(Entry.from_bytes("mem.json", data), Shape.ARRAY, report))
    assert [c.conversation_id for c in convs] == ["d1"] and convs[0].source_file == "mem.json"


# --- damaged input ----------------------------------------------------------------------------

def test_malformed_jsonl_line_is_reported_and_the_others_read(tmp_path):
    lines = [json.dumps(simple_pair("ok1")), '{"uuid": "broken", "chat_messages": [', json.dumps(simple_pair("ok2"))]
    convs, report = read_file(tmp_path, "conversations.jsonl", "\n".join(lines) + "\n")
    assert [c.conversation_id for c in convs] == ["ok1", "ok2"]
    assert len(report.errors) == 1
    err = report.errors[0]
    assert err.file.endswith("conversations.jsonl") and err.where == "line 2"
    assert err.raw is not None and b"broken" in err.raw


def test_truncated_array_keeps_the_records_before_the_cut(tmp_path):
    full = json.dumps([simple_pair("t1"), simple_pair("t2"), simple_pair("t3")])
    cut = full[: full.index('"t3"') + 20]
    convs, report = read_file(tmp_path, "conversations.json", cut)
    assert [c.conversation_id for c in convs] == ["t1", "t2"]
    assert len(report.errors) == 1
    assert report.errors[0].file.endswith("conversations.json")
    assert "after record 1" in report.errors[0].where and "truncated" in report.errors[0].reason


def test_wrong_shape_record_reported_with_its_uuid_and_next_record_read(tmp_path):
    bad = conv("bad-uuid", {"not": "a list"})
    convs, report = read_file(tmp_path, "conversations.json", json.dumps([simple_pair("g1"), bad, simple_pair("g2")]))
    assert [c.conversation_id for c in convs] == ["g1", "g2"]
    assert len(report.errors) == 1
    err = report.errors[0]
    assert "bad-uuid" in err.where and "record 1" in err.where
    assert "chat_messages" in err.reason
    assert err.raw is not None and b"bad-uuid" in err.raw


def test_non_object_message_is_reported_and_the_rest_of_the_conversation_read(tmp_path):
    c = simple_pair("partial")
    c["chat_messages"].insert(1, "garbage")
    convs, report = read_file(tmp_path, "conversations.json", json.dumps([c]))
    assert [m.text for m in convs[0].visible_turns] == ["Hello?", "Hi there."]
    assert len(report.errors) == 1 and "partial" in report.errors[0].where and "message 1" in report.errors[0].where


def test_record_that_is_not_an_object_is_reported(tmp_path):
    convs, report = read_file(tmp_path, "conversations.json", json.dumps([simple_pair("first"), 17]))
    assert [c.conversation_id for c in convs] == ["first"]
    assert len(report.errors) == 1 and report.errors[0].where == "record 1"


# --- older exports: only `text`, no parents, not in time order, inline markup ---------------------

def old_msg(uuid, sender, text, t):
    m = {"uuid": uuid, "text": text, "sender": sender, "attachments": [], "files": []}
    if t is not None:
        m["created_at"] = t
    return m


def old_conv(uuid, messages):
    return {"uuid": uuid, "name": "Old chat", "created_at": "2024-03-01T09:00:00.000000Z",
            "updated_at": "2024-03-01T09:30:00.000000Z", "account": {"uuid": "acct-1"}, "chat_messages": messages}


def test_old_export_out_of_time_order_is_ordered_by_created_at_stably(tmp_path):
    c = old_conv("shuffled", [
        old_msg("a1", "assistant", "First answer", "2024-03-01T09:00:10.000000Z"),
        old_msg("h1", "human", "First question", "2024-03-01T09:00:00.000000Z"),
        old_msg("h2", "human", "Second question", "2024-03-01T09:05:00.000000Z"),
        old_msg("h2b", "human", "...and a follow-up", "2024-03-01T09:05:00.000000Z"),  # a tie: array order
        old_msg("a2", "assistant", "Second answer", None),  # undated: stays after the one before it
        old_msg("a0", "assistant", "Greeting", "2024-03-01T08:59:00.000000Z"),
    ])
    (c,), report = read_file(tmp_path, "conversations.json", json.dumps([c]))
    assert report.errors == [] and report.drift == {}
    assert [m.message_id for m in c.messages] == ["a0", "h1", "a1", "h2", "h2b", "a2"]
    assert [m.parent_id for m in c.messages] == [None, "a0", "h1", "a1", "h2", "h2b"]
    assert [(m.message_id, m.seq) for m in c.visible_turns] == [("a0", 0), ("h1", 1), ("a1", 2), ("h2", 3), ("h2b", 4), ("a2", 5)]
    assert c.current_node == "a2"


ARTIFACT_TEXT = (
    "Here is a script.\n\n<antThinking>A reusable script: worth an artifact.</antThinking>\n\n"
    '<antArtifact identifier="fib-script" type="application/vnd.ant.code" language="python" title="Fibonacci">\n'
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n</antArtifact>\n\nRun it with `python fib.py`."
)


def test_old_export_inline_thinking_is_reasoning_and_artifacts_are_tool_calls(tmp_path):
    c = old_conv("inline", [
        old_msg("h1", "human", "Write fib. What are <antThinking> tags?", "2024-03-01T09:00:00.000000Z"),
        old_msg("a1", "assistant", ARTIFACT_TEXT, "2024-03-01T09:00:05.000000Z"),
        old_msg("h2", "human", "Now a doc only.", "2024-03-01T09:01:00.000000Z"),
        old_msg("a2", "assistant", "<antArtifact title='Notes' type=\"text/markdown\" identifier=\"notes\"># Notes\nline", "2024-03-01T09:01:05.000000Z"),
    ])
    (c,), report = read_file(tmp_path, "conversations.json", json.dumps([c]))
    assert report.errors == [] and report.drift == {}
    m = by_id(c)
    assert m["h1"].text == "Write fib. What are <antThinking> tags?"  # a person's own words stay as they were
    a1 = m["a1"]
    assert a1.kind is MessageKind.TURN and a1.text == "Here is a script.\n\nRun it with `python fib.py`."
    assert "<ant" not in a1.text and "def fib" not in a1.text and "worth an artifact" not in a1.text
    assert a1.reasoning == "A reusable script: worth an artifact."
    [call] = a1.tool_calls
    assert call.name == "artifacts" and call.id is None
    assert json.loads(call.input) == {
        "id": "fib-script", "type": "application/vnd.ant.code", "language": "python", "title": "Fibonacci",
        "content": "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    }
    assert a1.content_type == "text,antThinking,antArtifact"
    a2 = m["a2"]  # only an artifact, cut short before its end tag: no visible words
    assert a2.kind is MessageKind.TOOL_CALL and not a2.visible
    assert json.loads(a2.tool_calls[0].input) == {"title": "Notes", "type": "text/markdown", "id": "notes", "content": "# Notes\nline"}
    assert [x.message_id for x in c.visible_turns] == ["h1", "a1", "h2"]


def test_inline_artifacts_look_like_the_newer_exports_artifact_tool_calls(tmp_path):
    newer = conv("newer", [
        msg("h", "human", "Fib?", content=[block_text("Fib?")]),
        msg("a", "assistant", "", parent="h", content=[
            block_text("Here is a script."),
            {"type": "tool_use", "id": "toolu_1", "name": "artifacts", "input": {
                "id": "fib-script", "type": "application/vnd.ant.code", "title": "Fibonacci", "command": "create",
                "content": "def fib(n): ...", "language": "python"}},
        ]),
    ])
    older = old_conv("older", [old_msg("h", "human", "Fib?", "2024-03-01T09:00:00Z"), old_msg("a", "assistant", ARTIFACT_TEXT, "2024-03-01T09:00:01Z")])
    (new_c, old_c), report = read_file(tmp_path, "conversations.json", json.dumps([newer, older]))
    assert report.errors == []
    [new_call], [old_call] = by_id(new_c)["a"].tool_calls, by_id(old_c)["a"].tool_calls
    assert new_call.name == old_call.name == "artifacts"
    new_in, old_in = json.loads(new_call.input), json.loads(old_call.input)
    for key in ("id", "type", "title", "language"):
        assert new_in[key] == old_in[key], key
    assert old_in["content"].startswith("def fib(n)")


def test_old_export_normalized_rows(tmp_path):
    from chatetl.tables import TableWriter, read_rows

    c = old_conv("rows", [
        old_msg("a1", "assistant", ARTIFACT_TEXT, "2024-03-01T09:00:05.000000Z"),
        old_msg("h1", "human", "Write fib.", "2024-03-01T09:00:00.000000Z"),
    ])
    convs, _ = read_file(tmp_path, "conversations.json", json.dumps([c]))
    with TableWriter(tmp_path / "c.parquet", tmp_path / "m.parquet") as writer:
        for x in convs:
            writer.add(x, upload_key="raw/old/conversations.json")
    [row] = list(read_rows(tmp_path / "c.parquet"))
    assert (row["conversation_key"], row["source"], row["message_count"], row["current_node"]) == ("claude-ai:rows", "claude-ai", 2, "a1")
    rows = list(read_rows(tmp_path / "m.parquet"))
    assert [(r["message_id"], r["parent_id"], r["seq"], r["kind"]) for r in rows] == [("h1", None, 0, "turn"), ("a1", "h1", 1, "turn")]
    assert rows[1]["text"] == "Here is a script.\n\nRun it with `python fib.py`."
    assert rows[1]["reasoning"] == "A reusable script: worth an artifact."
    assert [(t["name"], json.loads(t["input"])["id"]) for t in rows[1]["tool_calls"]] == [("artifacts", "fib-script")]


# --- 2026 downloads: a manifest naming several zips -------------------------------------------------

def _zip(files):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data if isinstance(data, bytes) else json.dumps(data))
    return buf.getvalue()


PART_CATEGORIES = ("conversations", "projects", "memories", "design_chats", "light_metadata")


def manifest(parts=PART_CATEGORIES):
    return {"total_files": len(parts), "data_files": [
        {"category": c, "export_url": f"https://claude.ai/export/x/download/{c}", "filename": f"{c}-000.zip"} for c in parts]}


def download_parts():
    """The zips of one 2026 download, but design_chats (not in this upload)."""
    project = {"uuid": "proj-1", "name": "P", "description": "", "is_private": True, "prompt_template": "", "docs": []}
    return {
        "conversations-000.zip": _zip({"conversations.json": [simple_pair("d1"), simple_pair("d2")]}),
        "projects-000.zip": _zip({"projects/proj-1.json": project}),
        "memories-000.zip": _zip({"memories/acct-1.json": {"conversations_memory": "Likes tea.", "project_memories": {}}}),
        "light_metadata-000.zip": _zip({"users.json": [{"uuid": "acct-1", "full_name": "T", "email_address": "t@example.invalid"}]}),
    }


MANIFEST_NAME = "manifest-0c1d-2026-09-10-21-25-17.json"


def test_2026_download_uploaded_as_one_zip_reads_and_names_the_missing_part():
    upload = _zip({MANIFEST_NAME: manifest(), **download_parts()})
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes("claude-2026.zip", upload), report))
    assert report.errors == [] and report.drift == {}
    assert [c.conversation_id for c in convs] == ["d1", "d2"]
    assert convs[0].source_file == "claude-2026.zip!conversations-000.zip!conversations.json"
    assert report.skipped["claude-ai-manifest file"] == 1 and report.skipped["claude-ai-sidecar file"] == 3
    assert [(w.file, w.reason) for w in report.warnings] == [
        (f"claude-2026.zip!{MANIFEST_NAME}", "missing from this upload: design_chats-000.zip, named by the Claude.ai manifest")
    ]


def test_2026_download_as_a_folder_with_every_part_reports_nothing_missing(tmp_path):
    folder = tmp_path / "download"
    folder.mkdir()
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest(PART_CATEGORIES[:3] + PART_CATEGORIES[4:]), indent=2))
    for name, data in download_parts().items():
        (folder / name.replace("projects-000", "projects-000 (1)")).write_bytes(data)  # a browser's second download
    report = ReadReport()
    convs = list(read_path(folder, report))
    assert report.errors == [] and [c.conversation_id for c in convs] == ["d1", "d2"]
    assert report.skipped["claude-ai-manifest file"] == 1
    assert report.warnings == []


def test_2026_parts_uploaded_one_by_one():
    parts = download_parts()
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes("raw/conversations-000.zip", parts["conversations-000.zip"]), report))
    assert [c.conversation_id for c in convs] == ["d1", "d2"] and report.errors == []
    for name in ("projects-000.zip", "memories-000.zip", "light_metadata-000.zip"):
        assert list(read_entry(Entry.from_bytes(f"raw/{name}", parts[name]), report)) == []
    report_manifest = ReadReport()
    assert list(read_entry(Entry.from_bytes(f"raw/{MANIFEST_NAME}", json.dumps(manifest()).encode()), report_manifest)) == []
    assert report_manifest.errors == [] and dict(report_manifest.skipped) == {"claude-ai-manifest file": 1}  # a sidecar alone
    assert report.errors == [] and report.skipped["claude-ai-sidecar file"] == 3


def test_manifest_detection_is_liberal_in_its_keys_and_strict_that_it_names_zips():
    liberal = [
        manifest(),
        {"version": 2, "files": [{"name": "conversations-000.zip", "size": 120, "sha256": "ab" * 32, "kind": "conversations"}]},
        {"parts": [{"path": "exports/projects-000.zip", "size_bytes": 7}]},
    ]
    for value in liberal:
        for data in (json.dumps(value), json.dumps(value, indent=2)):
            assert detect(Entry.from_bytes("m.json", data.encode())) == (Format.CLAUDE_AI_MANIFEST, Shape.OBJECT), value
    not_manifests = [
        {"version": 1, "export_files": [{"path": "conversations-000.json", "size_bytes": 10}]},  # ChatGPT's
        {"files": [{"name": "notes.txt"}]},
        {"data_files": [{"filename": "conversations-000.zip"}, {"filename": "conversations.json"}]},
        {"data_files": []},
        [{"data_files": [{"filename": "a.zip"}]}],  # an array of them: not one manifest
    ]
    for value in not_manifests:
        assert detect(Entry.from_bytes("m.json", json.dumps(value).encode()))[0] is not Format.CLAUDE_AI_MANIFEST, value


# --- issue 37: empty human messages, null messages ---------------------------------------------


def test_an_empty_human_message_is_hidden_not_a_numbered_turn(tmp_path):
    empty = msg("m-2", "human", "", content=[block_text("")], parent="m-1", t="2025-05-01T10:01:00.000000Z")
    spaces = msg("m-3", "human", "  \n", content=[block_text("  \n")], parent="m-2", t="2025-05-01T10:01:01.000000Z")
    image = msg("m-4", "human", "", content=[block_text("")], parent="m-3", t="2025-05-01T10:01:02.000000Z",
                files=[{"file_name": "photo.png"}])
    answer = msg("m-5", "assistant", "A photo.", content=[block_text("A photo.")], parent="m-4", t="2025-05-01T10:01:05.000000Z")
    first = msg("m-1", "human", "Hi", content=[block_text("Hi")], t="2025-05-01T10:00:00.000000Z")
    [c], report = read_file(tmp_path, "conversations.json", json.dumps([conv("c-empty", [first, empty, spaces, image, answer])]))
    m = by_id(c)
    for mid in ("m-2", "m-3"):
        assert m[mid].kind is MessageKind.HIDDEN and m[mid].extra["empty"] is True
    assert m["m-4"].kind is MessageKind.TURN and [a.name for a in m["m-4"].attachments] == ["photo.png"]
    assert [t.message_id for t in c.visible_turns] == ["m-1", "m-4", "m-5"]
    assert not report.errors


def test_a_null_in_chat_messages_is_a_warning_and_the_rest_read(tmp_path):
    c1 = simple_pair("c-null")
    c1["chat_messages"].insert(1, None)
    [c], report = read_file(tmp_path, "conversations.json", json.dumps([c1]))
    assert [t.text for t in c.visible_turns] == ["Hello?", "Hi there."]
    assert not report.errors
    assert [w.reason for w in report.warnings] == ["message is null: skipped"]
    assert "message 1" in report.warnings[0].where


def test_a_message_of_another_type_in_chat_messages_stays_an_error(tmp_path):
    c1 = simple_pair("c-num")
    c1["chat_messages"].insert(1, 5)
    [c], report = read_file(tmp_path, "conversations.json", json.dumps([c1]))
    assert [e.reason for e in report.errors] == ["message is not an object (got int)"]
    assert len(c.visible_turns) == 2
