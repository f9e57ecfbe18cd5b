"""Open WebUI chat exports: rows and bare chats, the history tree and currentId, the <details> blocks
(reasoning, tool calls, code interpreter), sources, files, drift, damage, detection, zips, tables."""

from __future__ import annotations

import html
import io
import json
import zipfile

import pyarrow.parquet as pq

from chatetl import tables
from chatetl.model import MessageKind, Role, Source
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.samples.open_webui import sample

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z


def message(mid, role, content, parent=None, t=0, **fields):
    m = {"id": mid, "parentId": parent, "childrenIds": [], "role": role, "content": content, "timestamp": T0 + t}
    if role == "assistant":
        m.update({"model": "llama3", "modelName": "Llama3", "modelIdx": 0, "done": True})
    else:
        m["models"] = ["llama3"]
    m.update(fields)
    return m


def row(cid, messages, current=None, title="A chat", params=None, **fields):
    by_id = {m["id"]: m for m in messages}
    for m in messages:
        if m["parentId"] in by_id:
            by_id[m["parentId"]]["childrenIds"].append(m["id"])
    r = {
        "id": cid, "user_id": "user-1", "title": title,
        "chat": {"id": cid, "title": title, "models": ["llama3"], "params": params or {},
                 "history": {"messages": by_id, "currentId": current if current is not None else messages[-1]["id"]},
                 "messages": [], "tags": [], "timestamp": (T0 - 5) * 1000, "files": []},
        "updated_at": T0 + 100, "created_at": T0 - 5, "share_id": None, "archived": False, "pinned": False,
        "meta": {"tags": ["work"]}, "folder_id": None,
    }
    r.update(fields)
    return r


def pair(cid, q="Hello?", a="Hi there."):
    return row(cid, [message(f"{cid}-u", "user", q), message(f"{cid}-a", "assistant", a, parent=f"{cid}-u", t=5)])


def read_bytes(name, data):
    report = ReadReport()
    return list(read_entry(Entry.from_bytes(name, data if isinstance(data, bytes) else data.encode()), report)), report


def reasoning_block(text, seconds=2):
    quoted = html.escape("\n".join(f"> {line}" for line in text.splitlines()))
    return f'<details type="reasoning" done="true" duration="{seconds}">\n<summary>Thought for {seconds} seconds</summary>\n{quoted}\n</details>\n'


def tool_block(call_id, name, arguments, result):
    args, res = html.escape(json.dumps(json.dumps(arguments))), html.escape(json.dumps(result))
    return (f'<details type="tool_calls" done="true" id="{call_id}" name="{name}" arguments="{args}" result="{res}" '
            f'files="" embeds="">\n<summary>Tool Executed</summary>\n</details>\n')


# --- forms and fields ---------------------------------------------------------------------------

def test_export_array_reads_every_row_with_its_fields():
    convs, report = read_bytes("chat-export-1767225600.json", json.dumps([pair("c1"), pair("c2", "Yo", "Hey")]))
    assert report.errors == [] and report.drift == {}
    assert report.formats["open-webui"] == 1
    assert [c.conversation_id for c in convs] == ["c1", "c2"]
    c1 = convs[0]
    assert c1.source is Source.OPEN_WEBUI and c1.platform == "open-webui" and c1.key == "open-webui:c1"
    assert c1.title == "A chat" and c1.model == "llama3" and c1.url is None
    assert c1.created_at.timestamp() == T0 - 5 and c1.updated_at.timestamp() == T0 + 100
    assert c1.meta == {"user_id": "user-1", "tags": ["work"]}
    assert [(m.role, m.kind, m.text, m.seq) for m in c1.visible_turns] == [
        (Role.USER, MessageKind.TURN, "Hello?", 0), (Role.ASSISTANT, MessageKind.TURN, "Hi there.", 1)]
    assert c1.messages[1].model == "llama3" and c1.messages[0].model is None  # who answered, not whom the user asked
    assert c1.messages[1].created_at.timestamp() == T0 + 5
    assert c1.messages[1].extra == {"modelName": "Llama3"}
    assert report.conversations == 2 and report.messages == 4


def test_current_id_is_the_active_leaf_among_regenerated_answers():
    msgs = [
        message("u1", "user", "Name a colour."),
        message("a1", "assistant", "Blue.", parent="u1", t=5),
        message("a2", "assistant", "Green.", parent="u1", t=9),  # regenerated, later
        message("u2", "user", "Why blue?", parent="a1", t=20),
        message("a3", "assistant", "It is calm.", parent="u2", t=25),
    ]
    convs, report = read_bytes("x.json", json.dumps([row("c", msgs, current="a3")]))
    assert report.errors == []
    conv = convs[0]
    assert conv.current_node == "a3"
    assert [m.message_id for m in conv.visible_turns] == ["u1", "a1", "u2", "a3"]
    a2 = next(m for m in conv.messages if m.message_id == "a2")
    assert a2.parent_id == "u1" and not a2.on_active_branch and a2.seq is None  # kept, off the branch


def test_current_id_can_point_at_the_regenerated_answer():
    msgs = [message("u1", "user", "Q"), message("a1", "assistant", "first", parent="u1", t=1),
            message("a2", "assistant", "second", parent="u1", t=2)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs, current="a1")]))
    assert [m.text for m in convs[0].visible_turns] == ["Q", "first"]


def test_children_ids_give_the_parent_where_parent_id_is_missing():
    msgs = [message("u1", "user", "Q"), message("a1", "assistant", "A", parent="u1", t=1)]
    r = row("c", msgs)
    del r["chat"]["history"]["messages"]["a1"]["parentId"]
    convs, report = read_bytes("x.json", json.dumps([r]))
    assert report.errors == []
    assert convs[0].messages[1].parent_id == "u1"


# --- what is no visible text --------------------------------------------------------------------

def test_reasoning_details_are_reasoning_not_visible_text():
    content = reasoning_block("Weigh 2 & 3 <carefully>.\nThen add.") + "The sum is 5."
    msgs = [message("u", "user", "2+3?"), message("a", "assistant", content, parent="u", t=3)]
    convs, report = read_bytes("x.json", json.dumps([row("c", msgs)]))
    assert report.errors == []
    answer = convs[0].messages[1]
    assert answer.kind is MessageKind.TURN and answer.text == "The sum is 5."
    assert answer.reasoning == "Weigh 2 & 3 <carefully>.\nThen add."
    assert answer.content_type == "text,reasoning"


def test_raw_think_block_of_older_versions_is_reasoning():
    msgs = [message("u", "user", "Hi"), message("a", "assistant", "<think>\nThe user greets me.\n</think>\nHello!", parent="u", t=1)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs)]))
    answer = convs[0].messages[1]
    assert (answer.text, answer.reasoning) == ("Hello!", "The user greets me.")


def test_an_answer_of_only_reasoning_is_a_reasoning_message():
    msgs = [message("u", "user", "Hi"), message("a", "assistant", reasoning_block("Thinking only."), parent="u", t=1)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs)]))
    answer = convs[0].messages[1]
    assert answer.kind is MessageKind.REASONING and answer.text == "Thinking only." and answer.seq is None


def test_tool_call_details_become_tool_calls_with_their_results():
    content = tool_block("call_7", "get_weather", {"city": "Oslo"}, {"temp": -3}) + "It is -3 C in Oslo."
    msgs = [message("u", "user", "Weather in Oslo?"), message("a", "assistant", content, parent="u", t=2)]
    convs, report = read_bytes("x.json", json.dumps([row("c", msgs)]))
    assert report.errors == []
    answer = convs[0].messages[1]
    assert answer.kind is MessageKind.TURN and answer.text == "It is -3 C in Oslo."
    assert [(c.id, c.name, json.loads(c.input)) for c in answer.tool_calls] == [("call_7", "get_weather", {"city": "Oslo"})]
    assert [(r.tool_call_id, r.name, json.loads(r.output)) for r in answer.tool_results] == [("call_7", "get_weather", {"temp": -3})]


def test_an_answer_of_only_a_pending_tool_call_is_a_tool_call_message():
    pending = '<details type="tool_calls" done="false" id="c1" name="search" arguments="&quot;{}&quot;">\n<summary>Executing...</summary>\n</details>\n'
    msgs = [message("u", "user", "Look it up"), message("a", "assistant", pending, parent="u", t=1)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs)]))
    answer = convs[0].messages[1]
    assert answer.kind is MessageKind.TOOL_CALL and answer.tool_calls[0].name == "search" and answer.tool_results == []


def test_code_interpreter_details_become_a_call_and_its_output():
    output = html.escape(json.dumps({"stdout": "42\n"}))
    content = (f'Let me compute.\n<details type="code_interpreter" done="true" output="{output}">\n<summary>Analyzed</summary>\n'
               f'```python\nprint(6 * 7)\n```\n</details>\nIt is 42.')
    msgs = [message("u", "user", "6*7?"), message("a", "assistant", content, parent="u", t=1)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs)]))
    answer = convs[0].messages[1]
    assert answer.text == "Let me compute.\nIt is 42."
    assert [(c.name, c.input) for c in answer.tool_calls] == [("code_interpreter", "print(6 * 7)")]
    assert json.loads(answer.tool_results[0].output) == {"stdout": "42\n"}
    assert answer.tool_results[0].tool_call_id == answer.tool_calls[0].id


def test_a_details_block_of_another_type_is_left_in_the_text():
    content = "<details><summary>Spoiler</summary>It was the butler.</details>"
    msgs = [message("u", "user", "Tell me"), message("a", "assistant", content, parent="u", t=1)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs)]))
    assert convs[0].messages[1].text == content


def test_system_prompt_is_a_hidden_message_above_the_first_turn():
    msgs = [message("u", "user", "Hi"), message("a", "assistant", "Hello", parent="u", t=1)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs, params={"system": "Answer in French.", "temperature": 0.2})]))
    conv = convs[0]
    system = conv.messages[0]
    assert (system.role, system.kind, system.text) == (Role.SYSTEM, MessageKind.HIDDEN, "Answer in French.")
    assert conv.messages[1].parent_id == system.message_id
    assert [m.text for m in conv.visible_turns] == ["Hi", "Hello"]
    assert conv.meta["params"] == {"temperature": 0.2}


# --- citations and attachments ------------------------------------------------------------------

def test_sources_become_one_citation_per_source():
    sources = [
        {"source": {"id": "doc-1", "name": "handbook.pdf", "type": "file"},
         "document": ["Page one text.", "Page two text."],
         "metadata": [{"source": "handbook.pdf", "name": "handbook.pdf", "page": 1}, {"source": "handbook.pdf", "name": "handbook.pdf", "page": 2}]},
        {"source": {"name": "https://news.example.org/story", "type": "web_search"},
         "document": ["A story."], "metadata": [{"source": "https://news.example.org/story", "title": "The story"}]},
    ]
    msgs = [message("u", "user", "Q"), message("a", "assistant", "See [1] and [2].", parent="u", t=1, sources=sources)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs)]))
    cites = convs[0].messages[1].citations
    assert [(c.title, c.url, c.snippet, c.source) for c in cites] == [
        ("handbook.pdf", None, "Page one text.", "file"),
        ("The story", "https://news.example.org/story", "A story.", "news.example.org"),
    ]


def test_older_citations_field_is_read_like_sources():
    cites = [{"source": {"name": "https://a.example.org/x"}, "document": ["x"], "metadata": [{"source": "https://a.example.org/x"}]}]
    msgs = [message("u", "user", "Q"), message("a", "assistant", "A", parent="u", t=1, citations=cites)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs)]))
    assert [c.url for c in convs[0].messages[1].citations] == ["https://a.example.org/x"]


def test_files_become_attachments_without_inline_bytes():
    files = [
        {"type": "image", "url": "data:image/png;base64," + "A" * 400},
        {"type": "file", "id": "f-1", "name": "notes.txt", "url": "/api/v1/files/f-1", "size": 120,
         "file": {"id": "f-1", "filename": "notes.txt", "meta": {"name": "notes.txt", "content_type": "text/plain", "size": 120},
                  "data": {"content": "my notes"}}},
    ]
    msgs = [message("u", "user", "Look at these", files=files), message("a", "assistant", "Nice.", parent="u", t=1)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs)]))
    image, notes = convs[0].messages[0].attachments
    assert (image.kind, image.mime_type, image.pointer, image.size) == ("image", "image/png", None, 300)
    assert (notes.kind, notes.id, notes.name, notes.mime_type, notes.size, notes.pointer, notes.text) == (
        "file", "f-1", "notes.txt", "text/plain", 120, "/api/v1/files/f-1", "my notes")


# --- other shapes -------------------------------------------------------------------------------

def test_bare_chat_object_without_an_id_gets_a_stable_derived_id():
    bare = row("", [message("m-1", "user", "Hi"), message("m-2", "assistant", "Hello", parent="m-1", t=1)])["chat"]
    data = json.dumps(bare, indent=2)
    assert detect(Entry.from_bytes("chat.json", data.encode())) == (Format.OPEN_WEBUI, Shape.OBJECT)
    first, report = read_bytes("chat.json", data)
    again, _ = read_bytes("other-name.json", data)
    assert report.errors == []
    assert first[0].conversation_id == again[0].conversation_id != ""
    assert [m.text for m in first[0].visible_turns] == ["Hi", "Hello"]


def test_old_chat_without_history_reads_its_flat_messages_in_order():
    r = row("old", [message("x", "user", "placeholder")])
    r["chat"]["history"] = {}
    r["chat"]["messages"] = [{"id": "m1", "role": "user", "content": "First"}, {"id": "m2", "role": "assistant", "content": "Second"}]
    convs, report = read_bytes("x.json", json.dumps([r]))
    assert report.errors == []
    assert [(m.message_id, m.parent_id, m.seq) for m in convs[0].messages] == [("m1", None, 0), ("m2", "m1", 1)]


def test_unknown_fields_are_counted_as_drift_and_kept():
    msgs = [message("u", "user", "Q"), message("a", "assistant", "A", parent="u", t=1, sparkle=True)]
    r = row("c", msgs, new_row_field=1)
    r["chat"]["newChatField"] = "x"
    r["chat"]["history"]["messages"]["u"]["role"] = "narrator"
    convs, report = read_bytes("x.json", json.dumps([r]))
    assert report.errors == []
    assert report.drift == {"open-webui.row_field:new_row_field": 1, "open-webui.chat_field:newChatField": 1,
                            "open-webui.message_field:sparkle": 1, "open-webui.role:narrator": 1}
    conv = convs[0]
    assert conv.meta["new_row_field"] == 1 and conv.meta["chat"] == {"newChatField": "x"}
    by_id = {m.message_id: m for m in conv.messages}
    assert by_id["a"].extra["sparkle"] is True and by_id["u"].extra["raw_role"] == "narrator"


# --- damage -------------------------------------------------------------------------------------

def test_damaged_parts_are_reported_with_their_place_and_the_rest_is_read():
    broken_message = row("c2", [message("u", "user", "Q"), message("a", "assistant", "A", parent="u", t=1)])
    broken_message["chat"]["history"]["messages"]["bad"] = ["not", "a", "message"]
    bad_chat = dict(pair("c3"), chat=["not", "a", "chat"])
    convs, report = read_bytes("x.json", json.dumps([pair("c1"), broken_message, bad_chat, pair("c4")]))
    assert [c.conversation_id for c in convs] == ["c1", "c2", "c4"]
    assert [len(c.messages) for c in convs] == [2, 2, 2]
    places = [(e.where, e.reason) for e in report.errors]
    assert places == [
        ("record 1 (conversation c2) message bad", "message is not an object (got list)"),
        ("record 2 (conversation c3)", "ValueError: `chat` is not an object (got list)"),
    ]
    assert all(e.file == "x.json" for e in report.errors) and report.errors[1].raw is not None


def test_truncated_export_keeps_the_chats_before_the_cut():
    data = json.dumps([pair("c1"), pair("c2")])
    convs, report = read_bytes("x.json", data[: len(data) - 40])
    assert [c.conversation_id for c in convs] == ["c1"]
    assert len(report.errors) == 1 and "truncated" in report.errors[0].reason


# --- detection, zips, tables --------------------------------------------------------------------

def test_detection_takes_open_webui_files_and_only_them():
    def fmt(obj):
        return detect(Entry.from_bytes("f.json", json.dumps(obj).encode()))[0]

    assert fmt([pair("c1")]) is Format.OPEN_WEBUI
    big = pair("big")
    big["chat"]["history"]["messages"]["big-a"]["content"] = "x" * 200_000  # the head ends inside the history
    assert fmt([big]) is Format.OPEN_WEBUI
    assert fmt([{"id": "c", "user_id": "u", "chat": {"models": ["m"], "messages": [{"role": "user", "content": "hi"}]}}]) is Format.OPEN_WEBUI
    # a record that merely has a `chat` or a `history` key is not Open WebUI's
    assert fmt([{"id": "x", "chat": {"text": "hello"}}]) is None
    assert fmt({"history": {"entries": []}, "title": "browser history"}) is None
    assert fmt({"chat": "general", "history": {"messages": {}}}) is not Format.OPEN_WEBUI
    # nor is Open WebUI taken for the formats whose keys it shares
    node = {"id": "n1", "parent": None, "children": [], "message": {"id": "n1", "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["hi"]}}}
    chatgpt = {"id": "g", "title": "t", "create_time": 1.0, "mapping": {"n1": node}, "current_node": "n1"}
    assert fmt([chatgpt]) is Format.CHATGPT
    assert fmt([{"uuid": "c", "name": "n", "chat_messages": []}]) is Format.CLAUDE_AI


def test_reading_from_a_zip():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("open-webui/chat-export-1767225600.json", json.dumps([pair("z1"), pair("z2")]))
        zf.writestr("readme.txt", "exported from my server")
    convs, report = read_bytes("backup.zip", buf.getvalue())
    assert report.errors == []
    assert [c.conversation_id for c in convs] == ["z1", "z2"]
    assert convs[0].source_file == "backup.zip!open-webui/chat-export-1767225600.json"


def test_normalized_tables_hold_the_tree_kinds_and_tools(tmp_path):
    content = reasoning_block("Plan the call.") + tool_block("call_1", "lookup", {"q": "x"}, "found") + "Done."
    msgs = [message("u", "user", "Go"), message("a1", "assistant", "old answer", parent="u", t=1),
            message("a2", "assistant", content, parent="u", t=2)]
    convs, _report = read_bytes("x.json", json.dumps([row("c", msgs, current="a2")]))
    c_path, m_path = tmp_path / "c.parquet", tmp_path / "m.parquet"
    with tables.TableWriter(c_path, m_path) as writer:
        for conv in convs:
            writer.add(conv, upload_key="raw/x.json")
    (conv_row,) = pq.read_table(c_path).to_pylist()
    assert (conv_row["conversation_key"], conv_row["source"], conv_row["platform"]) == ("open-webui:c", "open-webui", "open-webui")
    assert (conv_row["message_count"], conv_row["total_messages"], conv_row["current_node"]) == (2, 3, "a2")
    assert conv_row["models_used"] == ["llama3"]
    rows = {r["message_id"]: r for r in pq.read_table(m_path).to_pylist()}
    assert (rows["a1"]["on_active_branch"], rows["a1"]["seq"]) == (False, None)
    a2 = rows["a2"]
    assert (a2["kind"], a2["text"], a2["reasoning"], a2["seq"], a2["parent_id"]) == ("turn", "Done.", "Plan the call.", 1, "u")
    assert a2["tool_calls"] == [{"id": "call_1", "name": "lookup", "input": '{"q": "x"}'}]
    assert a2["tool_results"] == [{"tool_call_id": "call_1", "name": "lookup", "output": "found", "is_error": False}]


def test_the_sample_reads_cleanly_with_a_branch():
    name, data = sample()
    convs, report = read_bytes(name, data)
    assert report.errors == [] and report.drift == {}
    assert len(convs) >= 2 and all(c.message_count >= 2 for c in convs)
    assert any(not m.on_active_branch for c in convs for m in c.messages)  # the regenerated answer
    assert any(m.reasoning for c in convs for m in c.messages) and any(m.tool_calls for c in convs for m in c.messages)


def test_empty_messages_are_hidden_and_kept_in_the_tree():
    msgs = [message("u1", "user", "first"), message("a1", "assistant", "one", parent="u1", t=1),
            message("u2", "user", "  ", parent="a1", t=2), message("a2", "assistant", "", parent="u2", t=3, error={"content": "timeout"}),
            message("u3", "user", "last", parent="a2", t=4), message("a3", "assistant", "two", parent="u3", t=5)]
    convs, _ = read_bytes("x.json", json.dumps([row("c", msgs)]))
    by_id = {m.message_id: m for m in convs[0].messages}
    assert [(by_id[i].kind, by_id[i].extra.get("empty"), by_id[i].seq) for i in ("u2", "a2")] == [
        (MessageKind.HIDDEN, True, None), (MessageKind.HIDDEN, True, None)]
    assert by_id["a2"].extra["error"] == {"content": "timeout"} and by_id["u3"].parent_id == "a2"
    assert [m.text for m in convs[0].visible_turns] == ["first", "one", "last", "two"]


# --- issue 37: the newer `output` items --------------------------------------------------------

OUTPUT = [
    {"type": "reasoning", "id": "rs_1", "status": "completed", "summary": [{"type": "summary_text", "text": "Need weather tool"}],
     "content": [{"type": "reasoning_text", "text": "The user asks about Paris; call get_weather."}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}",
     "status": "completed"},
    {"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": [{"type": "input_text", "text": "{\"sky\":\"sunny\"}"}],
     "status": "completed"},
    {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": "It is sunny."}]},
    {"type": "open_webui:code_interpreter", "code": "print(1)", "output": {"stdout": "1\n", "result": ""}},
    {"type": "open_webui:status", "description": "done"},
]


def test_output_items_give_the_tool_call_its_result_and_the_full_reasoning():
    content = (reasoning_block("Need weather tool")
               + "It is sunny.")
    answer = message("m2", "assistant", content, parent="m1", t=5, model="gpt-5", output=OUTPUT)
    convs, report = read_bytes("owui.json", json.dumps([row("c-out", [message("m1", "user", "Weather in Paris?"), answer])]))
    assert not report.errors and not any("output" in k for k in report.drift)
    m = {x.message_id: x for x in convs[0].messages}["m2"]
    assert (m.kind, m.text) == (MessageKind.TURN, "It is sunny.")
    assert m.reasoning == "The user asks about Paris; call get_weather."
    assert [(c.id, c.name, c.input) for c in m.tool_calls] == [("call_1", "get_weather", '{"city":"Paris"}'),
                                                              ("code_interpreter:1", "code_interpreter", "print(1)")]
    assert (m.tool_results[0].tool_call_id, m.tool_results[0].name, m.tool_results[0].output) == ("call_1", "get_weather", '{"sky":"sunny"}')
    assert m.tool_results[1].tool_call_id == "code_interpreter:1" and "stdout" in m.tool_results[1].output
    assert "output" not in m.extra


def test_an_output_item_of_an_unknown_type_is_drift_and_kept():
    answer = message("m2", "assistant", "Hi.", parent="m1", t=5, output=[{"type": "web_search_call", "id": "ws_1"},
                                                                      {"type": "message", "content": [{"type": "output_text", "text": "Hi."}]}])
    convs, report = read_bytes("owui.json", json.dumps([row("c-out2", [message("m1", "user", "Hello"), answer])]))
    m = {x.message_id: x for x in convs[0].messages}["m2"]
    assert m.text == "Hi." and m.extra["output_items"] == [{"type": "web_search_call", "id": "ws_1"}]
    assert report.drift.get("open-webui.output:web_search_call") == 1
