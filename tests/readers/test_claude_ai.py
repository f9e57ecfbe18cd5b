"""Claude.ai account export reader: array, JSONL, single object and zip forms; trees, blocks, damage."""

from __future__ import annotations

import json
import zipfile
from datetime import datetime, timezone

from chatetl.model import MessageKind, Role, Source
from chatetl.readers import ReadReport, read_path
from chatetl.readers.claude_ai import read
from chatetl.readers.detect import Format, Layout, detect
from chatetl.readers.entry import Entry

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
    assert c1.created_at == datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)
    assert c1.updated_at == datetime(2024, 5, 1, 11, 0, 0, 654321, tzinfo=timezone.utc)
    assert c1.meta == {"account_uuid": "acct-1"}
    assert convs[1].meta["summary"] == "A short chat about greetings."
    assert [(m.role, m.kind, m.text, m.seq) for m in c1.visible_turns] == [
        (Role.USER, MessageKind.TURN, "Hello?", 0), (Role.ASSISTANT, MessageKind.TURN, "Hi there.", 1)]
    assert c1.messages[0].parent_id is None  # the nil-UUID root parent
    assert c1.source_file.endswith("conversations.json")
    assert report.conversations == 2 and report.messages == 4


def test_jsonl_form_as_the_seed_documents(tmp_path):
    lines = "\n".join(json.dumps(simple_pair(f"c{i}")) for i in range(3)) + "\n"
    assert detect(Entry.from_bytes("conversations.jsonl", lines.encode())) == (Format.CLAUDE_AI, Layout.JSONL)
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
    convs = list(read(Entry.from_bytes("mem.json", data), Layout.ARRAY, report))
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
