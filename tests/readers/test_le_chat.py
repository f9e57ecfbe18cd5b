"""Mistral Le Chat exports: one chat-<uuid>.json file is one conversation (its unordered messages in
createdAt order), content chunks (text, tool calls, references, thinking), versions and preferred
answers as branches, the files folder, drift, damage, detection, zips and the normalized tables."""

from __future__ import annotations

import io
import json
import zipfile

import pyarrow.parquet as pq

from chatetl import tables
from chatetl.model import MessageKind, Role, Source
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.samples.le_chat import sample

CHAT = "0b7f6c3e-1d2a-4c5b-9e8f-123456789abc"


def msg(mid, role, content, second, chat=CHAT, **fields):
    m = {"id": mid, "version": 0, "chatId": chat, "content": content, "contentChunks": None, "role": role,
         "createdAt": f"2025-09-19T16:18:{second:02d}.236Z", "reaction": "neutral", "reactionDetail": None,
         "reactionComment": None, "preference": None, "preferenceOver": None, "context": None, "canvas": [], "quotes": [], "files": []}
    m.update(fields)
    return m


def chat_file(messages, chat=CHAT):
    return f"chat-{chat}.json", json.dumps(messages, indent=2).encode()


def read_bytes(name, data):
    report = ReadReport()
    return list(read_entry(Entry.from_bytes(name, data), report)), report


def only(messages, name=None):
    fname, data = chat_file(messages)
    convs, report = read_bytes(name or fname, data)
    assert report.errors == [], [str(e) for e in report.errors]
    (conv,) = convs
    return conv, report


def test_one_file_is_one_chat_with_its_messages_in_created_at_order():
    messages = [msg("a2", "assistant", "Six.", 30), msg("u1", "user", "How much is 2+2? Asking for a friend.", 10),
                msg("u2", "user", "And 3+3?", 25), msg("a1", "assistant", "Four.", 12)]
    conv, report = only(messages)
    assert report.formats["le-chat"] == 1 and report.drift == {} and report.conversations == 1 and report.messages == 4
    assert conv.source is Source.LE_CHAT and conv.platform == "mistral" and conv.conversation_id == CHAT
    assert conv.url == f"https://chat.mistral.ai/chat/{CHAT}" and conv.key == f"mistral:{CHAT}"
    assert conv.title == "How much is 2+2? Asking for a friend." and conv.meta == {"title_from": "first user message"}
    assert conv.created_at.second == 10 and conv.updated_at.second == 30
    assert [(m.message_id, m.parent_id, m.seq) for m in conv.visible_turns] == [
        ("u1", None, 0), ("a1", "u1", 1), ("u2", "a1", 2), ("a2", "u2", 3)]
    assert conv.current_node == "a2" and conv.messages[1].role is Role.ASSISTANT


def test_a_long_first_message_gives_a_shortened_title():
    conv, _ = only([msg("u", "user", "word " * 60 + "\nsecond line", 1), msg("a", "assistant", "ok", 2)])
    assert len(conv.title) == 80 and conv.title.endswith("…")


def test_text_chunks_are_the_text_references_citations_tool_calls_calls():
    chunks = [
        {"type": "tool_call", "id": "t1", "name": "web_search", "turn": 0, "isDone": True, "success": True, "toolType": "rag",
         "publicArguments": "capital of france", "publicResult": {"hits": 2}, "isInterrupted": False, "requiresConfirmation": False},
        {"type": "text", "text": "Paris"}, {"type": "reference", "referenceIds": [1, 2]}, {"type": "text", "text": " is the capital."},
    ]
    refs = [{"title": "Paris - Wiki", "url": "https://en.wikipedia.org/wiki/Paris", "description": "Capital of France."}]
    conv, _ = only([msg("u", "user", "Capital of France?", 1), msg("a", "assistant", "Paris is the capital.", 2, contentChunks=chunks, references=refs)])
    answer = conv.messages[1]
    assert (answer.kind, answer.text, answer.content_type) == (MessageKind.TURN, "Paris is the capital.", "tool_call,text,reference")
    assert [(c.id, c.name, c.input) for c in answer.tool_calls] == [("t1", "web_search", "capital of france")]
    assert [(r.tool_call_id, json.loads(r.output), r.is_error) for r in answer.tool_results] == [("t1", {"hits": 2}, False)]
    assert [(c.title, c.url, c.snippet, c.source) for c in answer.citations] == [
        ("Paris - Wiki", "https://en.wikipedia.org/wiki/Paris", "Capital of France.", "en.wikipedia.org")]
    assert answer.extra["reference_ids"] == [1, 2]


def test_a_failed_tool_call_without_text_is_a_tool_call_message():
    chunks = [{"type": "tool_call", "id": "t", "name": "code_interpreter", "publicArguments": "1/0", "isDone": True,
               "success": False, "publicResult": "ZeroDivisionError"}]
    conv, _ = only([msg("u", "user", "Divide", 1), msg("a", "assistant", "", 2, contentChunks=chunks)])
    answer = conv.messages[1]
    assert answer.kind is MessageKind.TOOL_CALL and answer.text == "1/0" and answer.tool_results[0].is_error


def test_thinking_chunks_are_reasoning_and_custom_elements_are_kept():
    chunks = [{"type": "thinking", "thinking": [{"type": "text", "text": "The user wants a haiku."}]},
              {"type": "text", "text": "Autumn moonlight"}, {"type": "custom_element", "name": "weather_card", "props": {"city": "Paris"}}]
    conv, report = only([msg("u", "user", "A haiku?", 1), msg("a", "assistant", "Autumn moonlight", 2, contentChunks=chunks)])
    answer = conv.messages[1]
    assert (answer.text, answer.reasoning) == ("Autumn moonlight", "The user wants a haiku.")
    assert answer.extra["custom_elements"] == [chunks[2]] and report.drift == {}


def test_files_point_into_the_files_folder_beside_the_chat_file():
    files = [{"type": "image", "name": "cat.png"}, {"type": "document", "name": "notes.pdf"}, {"type": "text", "name": "../../etc/passwd"}]
    fname, data = chat_file([msg("u", "user", "Look", 1, files=files), msg("a", "assistant", "A cat.", 2)])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"export/{fname}", data)
        zf.writestr(f"export/chat-{CHAT}-files/cat.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 16)
        zf.writestr(f"export/chat-{CHAT}-files/notes.pdf", b"%PDF-1.4\n%%EOF\n")
    convs, report = read_bytes("le-chat.zip", buf.getvalue())
    assert report.errors == [] and report.skipped["not a chat file"] == 2
    (conv,) = convs
    assert conv.source_file == f"le-chat.zip!export/{fname}"
    assert [(a.kind, a.name, a.mime_type, a.pointer) for a in conv.messages[0].attachments] == [
        ("image", "cat.png", "image/png", f"export/chat-{CHAT}-files/cat.png"),
        ("file", "notes.pdf", "application/pdf", f"export/chat-{CHAT}-files/notes.pdf"),
        ("file", "../../etc/passwd", None, None),  # a name that is no plain file name points nowhere
    ]


def test_versions_of_one_message_are_siblings_the_highest_shown():
    messages = [msg("u", "user", "Q", 1), msg("a", "assistant", "first try", 2), msg("a", "assistant", "second try", 5, version=1),
                msg("u2", "user", "Thanks", 9)]
    conv, _ = only(messages)
    assert [(m.message_id, m.text) for m in conv.visible_turns] == [("u", "Q"), ("a", "second try"), ("u2", "Thanks")]
    old = next(m for m in conv.messages if m.message_id == "a@v0")
    assert (old.parent_id, old.on_active_branch, old.extra["version_of"]) == ("u", False, "a")
    assert next(m for m in conv.messages if m.message_id == "a").extra["version"] == 1


def test_an_answer_passed_over_for_a_preferred_one_is_a_sibling_off_the_branch():
    messages = [msg("u", "user", "Name a cat", 1), msg("a1", "assistant", "Miso", 3, preference="preferred", preferenceOver="a2"),
                msg("a2", "assistant", "Tofu", 3), msg("u2", "user", "Why Miso?", 8), msg("a3", "assistant", "It is cosy.", 9)]
    conv, _ = only(messages)
    assert [m.message_id for m in conv.visible_turns] == ["u", "a1", "u2", "a3"]
    passed = next(m for m in conv.messages if m.message_id == "a2")
    assert (passed.parent_id, passed.on_active_branch, passed.extra["passed_over_for"]) == ("u", False, "a1")


def test_parent_ids_where_a_file_has_them_are_the_tree():
    messages = [msg("u", "user", "Q", 1, parentId=None), msg("a1", "assistant", "A1", 2, parentId="u"),
                msg("a2", "assistant", "A2", 3, parentId="u"), msg("u2", "user", "More", 4, parentId="a1")]
    conv, _ = only(messages)
    assert [m.message_id for m in conv.visible_turns] == ["u", "a1", "u2"]  # the latest leaf
    assert next(m for m in conv.messages if m.message_id == "a2").parent_id == "u"


def test_unknown_fields_chunk_types_and_roles_are_drift_and_kept():
    chunks = [{"type": "text", "text": "Hi"}, {"type": "hologram", "data": 1}]
    conv, report = only([msg("u", "user", "Hi", 1, sparkle=True), msg("a", "oracle", "Hi", 2, contentChunks=chunks)])
    assert report.drift == {"le-chat.message_field:sparkle": 1, "le-chat.chunk:hologram": 1, "le-chat.role:oracle": 1}
    user, answer = conv.messages
    assert user.extra["sparkle"] is True
    assert answer.role is Role.ASSISTANT and answer.extra["raw_role"] == "oracle" and answer.extra["unknown_chunks"] == [chunks[1]]
    assert answer.text == "Hi"


def test_damaged_messages_are_reported_with_their_place_and_the_rest_read():
    messages = [msg("u", "user", "Q", 1), "not a message", msg("x", "user", "stray", 2, chat="another-chat"), msg("a", "assistant", "A", 3)]
    fname, data = chat_file(messages)
    convs, report = read_bytes(fname, data)
    assert [m.message_id for m in convs[0].messages] == ["u", "a"]
    assert [(e.where, e.reason) for e in report.errors] == [
        ("record 1", "message is not an object (got str)"),
        ("record 2", f"message of chat another-chat in the file of chat {CHAT}: not read"),
    ]
    # cut short: the messages before the cut are the chat
    convs, report = read_bytes(fname, data[: data.index(b'"id": "a"')])
    assert [m.message_id for m in convs[0].messages] == ["u"]
    assert any(e.where == "after record 2" and "truncated" in e.reason for e in report.errors)


def test_a_file_with_no_chat_id_anywhere_is_an_error():
    messages = [msg("u", "user", "Q", 1, chatId=None), msg("a", "assistant", "A", 2, chatId=None)]
    convs, report = read_bytes("messages.json", json.dumps(messages).encode())
    assert convs == [] and "chatId" in report.errors[0].reason
    convs, report = read_bytes(f"chat-{CHAT}.json", json.dumps(messages).encode())  # the file name says it
    assert report.errors == [] and convs[0].conversation_id == CHAT


def test_detection_takes_le_chat_files_and_only_them():
    def fmt(obj):
        return detect(Entry.from_bytes("f.json", json.dumps(obj).encode()))

    assert fmt([msg("u", "user", "Q", 1)]) == (Format.LE_CHAT, Shape.ARRAY)
    # other apps' message lists with a chatId are not Le Chat's
    assert fmt([{"id": "1", "chatId": "c", "role": "user", "content": "hi", "createdAt": "2025-01-01"}])[0] is None
    assert fmt([{"chatId": "c", "message": "hi", "edited": False}])[0] is None
    # nor is Le Chat taken for another format
    assert fmt([{"uuid": "c", "name": "n", "chat_messages": [], "chatId": "x"}])[0] is Format.CLAUDE_AI


def test_normalized_tables_hold_the_chat(tmp_path):
    chunks = [{"type": "text", "text": "Done."}, {"type": "tool_call", "id": "t", "name": "image_gen", "publicArguments": "a cat", "isDone": True, "publicResult": "ok"}]
    conv, _ = only([msg("u", "user", "Draw a cat", 1), msg("a", "assistant", "Done.", 2, contentChunks=chunks)])
    c_path, m_path = tmp_path / "c.parquet", tmp_path / "m.parquet"
    with tables.TableWriter(c_path, m_path) as writer:
        writer.add(conv, upload_key="raw/le-chat.zip")
    (conv_row,) = pq.read_table(c_path).to_pylist()
    assert (conv_row["conversation_key"], conv_row["source"], conv_row["url"]) == (f"mistral:{CHAT}", "le-chat", f"https://chat.mistral.ai/chat/{CHAT}")
    assert (conv_row["message_count"], conv_row["total_messages"], conv_row["upload_key"]) == (2, 2, "raw/le-chat.zip")
    rows = pq.read_table(m_path).to_pylist()
    assert [(r["message_id"], r["parent_id"], r["role"], r["kind"], r["seq"]) for r in rows] == [
        ("u", None, "user", "turn", 0), ("a", "u", "assistant", "turn", 1)]
    assert rows[1]["tool_calls"] == [{"id": "t", "name": "image_gen", "input": "a cat"}]


def test_the_sample_reads_cleanly_with_a_branch():
    name, data = sample()
    convs, report = read_bytes(name, data)
    assert report.errors == [] and report.drift == {}
    assert len(convs) == 2 and all(c.message_count >= 2 for c in convs)
    assert any(not m.on_active_branch for c in convs for m in c.messages)
    assert any(a.pointer for c in convs for m in c.messages for a in m.attachments)


def test_empty_messages_are_hidden_and_kept_in_the_chain():
    messages = [msg("u1", "user", "first", 1), msg("a1", "assistant", "one", 2), msg("u2", "user", " ", 3),
                msg("a2", "assistant", "", 4), msg("u3", "user", "last", 5), msg("a3", "assistant", "two", 6)]
    conv, _ = only(messages)
    by_id = {m.message_id: m for m in conv.messages}
    assert [(by_id[i].kind, by_id[i].extra.get("empty"), by_id[i].on_active_branch) for i in ("u2", "a2")] == [
        (MessageKind.HIDDEN, True, True), (MessageKind.HIDDEN, True, True)]
    assert [m.text for m in conv.visible_turns] == ["first", "one", "last", "two"]
