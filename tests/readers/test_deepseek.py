"""DeepSeek export reader: the `mapping` tree, fragments, the active branch, damage, detection, zip, tables."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow.parquet as pq
from reader_inputs import chatgpt_record, zip_bytes

from chatetl.model import MessageKind, Role, Source
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.samples import chatgpt_export
from chatetl.tables import TableWriter


def node(node_id, parent, children, fragments, t, *, model="deepseek-chat", files=None, **message_fields):
    message = {"files": files or [], "model": model, "inserted_at": t, "fragments": fragments, **message_fields}
    return {"id": node_id, "parent": parent, "children": children, "message": message}


def conversation(conv_id, nodes, **fields):
    """A conversation whose `root` holds the first node; `nodes` are (id, parent, fragments, time, extra...)."""
    mapping = {"root": {"id": "root", "parent": None, "children": [], "message": None}}
    for n in nodes:
        mapping[n["id"]] = n
        if n["parent"] in mapping:
            mapping[n["parent"]]["children"].append(n["id"])
    return {"id": conv_id, "title": f"Chat {conv_id}", "inserted_at": "2026-03-01T08:00:00.000+08:00",
            "updated_at": "2026-03-01T08:10:00.000+08:00", "mapping": mapping, **fields}


def t(second):
    return f"2026-03-01T08:00:{second:02d}.000+08:00"


def request(text):
    return {"id": 1, "type": "REQUEST", "content": text}


def response(text, **kw):
    return {"id": 2, "type": "RESPONSE", "content": text, **kw}


def pair(conv_id="c1"):
    return conversation(conv_id, [
        node("1", "root", [], [request("What is a monad?")], t(1)),
        node("2", "1", [], [response("A monoid in the category of endofunctors.")], t(5)),
    ])


def read(data, name="conversations.json"):
    report = ReadReport()
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return list(read_entry(Entry.from_bytes(name, raw), report)), report


def by_id(conv):
    return {m.message_id: m for m in conv.messages}


# --- conversations and turns ------------------------------------------------------------------

def test_a_conversation_reads_with_its_fields_turns_and_times():
    convs, report = read([pair("c1"), pair("c2")])
    assert report.errors == [] and report.drift == {}
    assert report.formats == {"deepseek": 1} and report.conversations == 2 and report.messages == 4
    c = convs[0]
    assert c.source is Source.DEEPSEEK and c.platform == "deepseek" and c.conversation_id == "c1"
    assert c.key == "deepseek:c1"
    assert c.url == "https://chat.deepseek.com/a/chat/s/c1"
    assert c.title == "Chat c1"
    assert c.created_at == datetime(2026, 3, 1, 0, 0, tzinfo=UTC)  # +08:00 into UTC
    assert c.updated_at == datetime(2026, 3, 1, 0, 10, tzinfo=UTC)
    assert [(m.role, m.kind, m.text, m.seq) for m in c.visible_turns] == [
        (Role.USER, MessageKind.TURN, "What is a monad?", 0),
        (Role.ASSISTANT, MessageKind.TURN, "A monoid in the category of endofunctors.", 1),
    ]
    first, second = c.visible_turns
    assert first.parent_id is None  # the `root` node has no message: its child is the first one
    assert second.parent_id == "1"
    assert second.model == "deepseek-chat" and second.created_at == datetime(2026, 3, 1, 0, 0, 5, tzinfo=UTC)
    assert second.content_type == "RESPONSE"
    assert c.current_node == "2"


def test_the_active_branch_is_the_latest_leaf_walked_back():
    c = conversation("c1", [
        node("1", "root", [], [request("Write a haiku")], t(1)),
        node("2", "1", [], [response("first try")], t(5)),
        node("3", "1", [], [response("second try")], t(9)),  # regenerated: the latest
        node("4", "2", [], [request("more on the first")], t(7)),
    ])
    convs, report = read([c])
    assert report.errors == []
    conv = convs[0]
    assert conv.current_node == "3"
    assert [m.message_id for m in conv.active_branch] == ["1", "3"]
    ids = by_id(conv)
    assert not ids["2"].on_active_branch and not ids["4"].on_active_branch and ids["2"].seq is None
    assert len(conv.messages) == 4 and conv.message_count == 2


def test_leaves_of_the_same_time_resolve_to_the_later_in_the_file_every_time():
    nodes = [
        node("1", "root", [], [request("Q")], t(1)),
        node("2", "1", [], [response("A")], t(5)),
        node("3", "1", [], [response("B")], t(5)),
    ]
    convs, _ = read([conversation("c1", nodes)])
    again, _ = read([conversation("c1", nodes)])
    assert convs[0].current_node == again[0].current_node == "3"
    swapped = [nodes[0], nodes[2], nodes[1]]
    convs, _ = read([conversation("c1", swapped)])
    assert convs[0].current_node == "2"  # file order decides a tie, nothing random


def test_nodes_without_a_message_are_passed_through_and_parents_come_from_children_too():
    c = conversation("c1", [node("1", "root", [], [request("Q")], t(1))])
    c["mapping"]["gap"] = {"id": "gap", "parent": "1", "children": ["2"], "message": None}
    c["mapping"]["1"]["children"].append("gap")
    answer = node("2", "gap", [], [response("A")], t(5))
    del answer["parent"]  # only the gap node's `children` says where it hangs
    c["mapping"]["2"] = answer
    convs, report = read([c])
    assert report.errors == [] and report.drift == {}
    assert by_id(convs[0])["2"].parent_id == "1"


# --- fragments --------------------------------------------------------------------------------

def test_think_is_reasoning_and_search_results_are_citations():
    results = [
        {"url": "https://example.org/a", "title": "Page A", "snippet": "about a", "cite_index": 1, "site_name": "Example"},
        {"url": "https://docs.example.net/b", "title": "Page B", "snippet": "about b", "cite_index": 2},
    ]
    c = conversation("c1", [
        node("1", "root", [], [request("Search it")], t(1)),
        node("2", "1", [], [
            {"id": 1, "type": "THINK", "content": "Let me look this up.", "elapsed_secs": 3.2},
            {"id": 2, "type": "SEARCH", "results": results},
            {"id": 3, "type": "RESPONSE", "content": "It is A [citation:1] and B [citation:2]."},
        ], t(5), model="deepseek-reasoner"),
    ])
    convs, report = read([c])
    assert report.errors == [] and report.drift == {}
    answer = by_id(convs[0])["2"]
    assert answer.kind is MessageKind.TURN and answer.role is Role.ASSISTANT
    assert answer.text == "It is A  and B ."
    assert answer.extra["raw_text"] == "It is A [citation:1] and B [citation:2]."
    assert answer.reasoning == "Let me look this up."
    assert answer.content_type == "THINK,SEARCH,RESPONSE"
    assert [(x.url, x.title, x.snippet, x.source) for x in answer.citations] == [
        ("https://example.org/a", "Page A", "about a", "Example"),
        ("https://docs.example.net/b", "Page B", "about b", "docs.example.net"),
    ]
    assert answer.model == "deepseek-reasoner"


def test_a_thought_alone_is_reasoning_and_an_empty_answer_is_hidden():
    c = conversation("c1", [
        node("1", "root", [], [request("Q")], t(1)),
        node("2", "1", [], [{"type": "THINK", "content": "Hmm."}], t(3)),
        node("3", "2", [], [{"type": "RESPONSE", "content": ""}], t(4)),
    ])
    convs, report = read([c])
    assert report.errors == []
    msgs = by_id(convs[0])
    assert msgs["2"].kind is MessageKind.REASONING and msgs["2"].text == "Hmm."
    assert msgs["3"].kind is MessageKind.HIDDEN and msgs["3"].extra["empty"] is True
    assert convs[0].message_count == 1


def test_tool_fragments_are_tool_calls_with_their_results_and_pages():
    c = conversation("c1", [
        node("1", "root", [], [request("Find the latest release")], t(1)),
        node("2", "1", [], [
            {"id": 1, "type": "TOOL_SEARCH", "queries": ["latest release"], "status": "FINISHED",
             "results": [{"url": "https://example.org/release", "title": "Release notes", "snippet": "v2 is out"}]},
            {"id": 2, "type": "TOOL_OPEN", "url": "https://example.org/release", "content": "v2 changes ..."},
        ], t(3)),
        node("3", "2", [], [response("v2 is out.")], t(6)),
    ])
    convs, report = read([c])
    assert report.errors == [] and report.drift == {}
    step = by_id(convs[0])["2"]
    assert step.kind is MessageKind.TOOL_CALL and step.role is Role.ASSISTANT
    assert [(call.id, call.name, call.input) for call in step.tool_calls] == [
        ("2:1", "search", '{"queries": ["latest release"]}'),
        ("2:2", "open", "https://example.org/release"),
    ]
    assert [(r.tool_call_id, r.name) for r in step.tool_results] == [("2:1", "search"), ("2:2", "open")]
    assert "Release notes\nhttps://example.org/release\nv2 is out" in step.tool_results[0].output
    assert step.tool_results[1].output == "v2 changes ..."
    assert [x.url for x in step.citations] == ["https://example.org/release"]
    assert [m.message_id for m in convs[0].visible_turns] == ["1", "3"]
    assert [m.message_id for m in convs[0].active_branch] == ["1", "2", "3"]


def test_files_and_file_fragments_are_attachments():
    c = conversation("c1", [
        node("1", "root", [], [
            {"type": "FILE", "file_name": "notes.txt", "file_id": "file-2", "file_size": 40, "content": "the notes"},
            request("Summarize these"),
        ], t(1), files=[{"id": "file-1", "file_name": "paper.pdf", "file_size": 12345, "mime_type": "application/pdf"}]),
        node("2", "1", [], [response("Done.")], t(5)),
    ])
    convs, report = read([c])
    assert report.errors == [] and report.drift == {}
    prompt = by_id(convs[0])["1"]
    assert prompt.role is Role.USER and prompt.kind is MessageKind.TURN
    assert [(a.kind, a.id, a.name, a.size, a.mime_type, a.text) for a in prompt.attachments] == [
        ("file", "file-1", "paper.pdf", 12345, "application/pdf", None),
        ("file", "file-2", "notes.txt", 40, None, "the notes"),
    ]


def test_unknown_fragments_and_fields_are_drift_kept_raw():
    c = conversation("c1", [
        node("1", "root", [], [request("Q")], t(1), shiny=True),
        node("2", "1", [], [response("A", sparkle=1), {"type": "HOLOGRAM", "content": "never shown"}], t(5)),
    ], folder="work")
    c["mapping"]["1"]["weight"] = 3
    convs, report = read([c])
    assert report.errors == []
    assert report.drift == {
        "deepseek.conversation_field:folder": 1, "deepseek.message_field:shiny": 1, "deepseek.node_field:weight": 1,
        "deepseek.fragment_field:sparkle": 1, "deepseek.fragment:HOLOGRAM": 1,
    }
    conv = convs[0]
    assert conv.meta == {"folder": "work"}
    msgs = by_id(conv)
    assert msgs["1"].extra == {"shiny": True, "weight": 3}
    assert msgs["2"].text == "A"  # the unknown fragment is not text
    assert msgs["2"].extra["unknown_fragments"] == [{"type": "HOLOGRAM", "content": "never shown"}]
    assert msgs["2"].extra["fragment_fields"] == [{"fragment": 0, "type": "RESPONSE", "sparkle": 1}]


# --- damage -----------------------------------------------------------------------------------

def test_a_damaged_conversation_is_reported_with_its_place_and_the_rest_is_read():
    no_mapping = {"id": "c-bad", "title": "x", "inserted_at": t(0), "mapping": ["not", "an", "object"]}
    bad_message = pair("c3")
    bad_message["mapping"]["2"]["message"] = "garbage"
    convs, report = read([pair("c1"), no_mapping, "not a conversation", bad_message])
    assert [c.conversation_id for c in convs] == ["c1", "c3"]
    places = [(e.where, e.reason) for e in report.errors]
    assert places[0][0] == "record 1 (conversation c-bad)" and "`mapping` is not an object" in places[0][1]
    assert places[1][0] == "record 2" and "expected a conversation object, got str" in places[1][1]
    assert places[2] == ("record 3 (conversation c3) node 2", "message is not an object (got str)")
    assert report.errors[0].raw is not None  # kept for quarantine
    assert [m.message_id for m in convs[1].messages] == ["1"]


def test_a_file_cut_short_keeps_what_came_before():
    data = json.dumps([pair("c1"), pair("c2")]).encode()
    convs, report = read(data[: len(data) - 40])
    assert [c.conversation_id for c in convs] == ["c1"]
    assert len(report.errors) == 1 and "truncated" in report.errors[0].reason


# --- detection --------------------------------------------------------------------------------

def _detect(data, name="conversations.json"):
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return detect(Entry.from_bytes(name, raw))


def test_deepseek_is_detected_and_never_taken_for_chatgpt():
    assert _detect([pair()]) == (Format.DEEPSEEK, Shape.ARRAY)
    # a first conversation whose `mapping` comes first and fills the head: its messages' fragments say it
    big = pair()
    big["mapping"]["1"]["message"]["fragments"][0]["content"] = "x" * 200_000
    ordered = {"mapping": big["mapping"], "id": big["id"], "title": big["title"], "inserted_at": big["inserted_at"]}
    assert _detect([ordered]) == (Format.DEEPSEEK, Shape.ARRAY)
    convs, report = read([ordered])
    assert report.errors == [] and convs[0].source is Source.DEEPSEEK


def test_chatgpt_is_never_taken_for_deepseek():
    assert _detect([chatgpt_record("g1")]) == (Format.CHATGPT, Shape.ARRAY)
    rooted = chatgpt_record("g2")  # a ChatGPT-like file whose tree starts at "root"
    rooted["mapping"] = {"root": {"id": "root", "parent": None, "children": ["m1"], "message": None},
                         "m1": {**rooted["mapping"]["m1"], "parent": "root"}}
    assert _detect([rooted]) == (Format.CHATGPT, Shape.ARRAY)
    for name, data in _members(chatgpt_export()):
        if name.startswith("conversations"):
            assert _detect(data, name)[0] is Format.CHATGPT


def _members(zip_data):
    import io
    import zipfile
    with zipfile.ZipFile(io.BytesIO(zip_data)) as zf:
        return [(i.filename, zf.read(i)) for i in zf.infolist() if i.filename.endswith(".json")]


# --- archive and tables -----------------------------------------------------------------------

def test_the_export_zip_reads_with_its_user_file_beside():
    user = {"id": "u-1", "email": "someone@example.com", "mobile": {"mobile_number": "000"}}
    data = zip_bytes({"conversations.json": json.dumps([pair("c1")]).encode(), "user.json": json.dumps(user).encode()})
    convs, report = read(data, "deepseek_export.zip")
    assert report.errors == [] and report.drift == {}
    assert [c.conversation_id for c in convs] == ["c1"]
    assert convs[0].source_file == "deepseek_export.zip!conversations.json"
    assert report.formats == {"deepseek": 1}


def test_the_normalized_tables_hold_its_rows(tmp_path):
    c = conversation("c1", [
        node("1", "root", [], [request("Q")], t(1)),
        node("2", "1", [], [{"type": "THINK", "content": "thinking"}, {"type": "SEARCH", "results": [{"url": "https://e.org", "title": "E"}]},
                            response("A")], t(5), model="deepseek-reasoner"),
    ])
    convs, _ = read([c])
    with TableWriter(tmp_path / "c.parquet", tmp_path / "m.parquet") as writer:
        for conv in convs:
            writer.add(conv, upload_key="raw/u1.json")
    (row,) = pq.read_table(tmp_path / "c.parquet").to_pylist()
    assert (row["conversation_key"], row["source"], row["platform"], row["conversation_id"]) == ("deepseek:c1", "deepseek", "deepseek", "c1")
    assert row["url"] == "https://chat.deepseek.com/a/chat/s/c1" and row["current_node"] == "2"
    assert (row["message_count"], row["total_messages"], row["models_used"]) == (2, 2, ["deepseek-chat", "deepseek-reasoner"])
    msgs = pq.read_table(tmp_path / "m.parquet").to_pylist()
    assert [(m["message_id"], m["parent_id"], m["role"], m["kind"], m["seq"]) for m in msgs] == [
        ("1", None, "user", "turn", 0), ("2", "1", "assistant", "turn", 1)]
    assert msgs[1]["reasoning"] == "thinking" and msgs[1]["citations"][0]["url"] == "https://e.org"


def test_the_built_in_sample_reads_cleanly():
    from chatetl.samples.deepseek import sample

    name, data = sample()
    convs, report = read(data, name)
    assert report.errors == [] and report.drift == {} and len(convs) == 2
    assert any(len(c.messages) > len(c.active_branch) for c in convs)  # one has a branch
    assert all(c.message_count >= 2 for c in convs)


def test_a_time_past_what_a_datetime_holds_is_null_and_counted_and_the_conversation_is_read():
    """9999-12-31T23:00-05:00 is in year 10000 in UTC: it used to lose its whole conversation (an OverflowError)."""
    late = pair("c1")
    late["inserted_at"] = "9999-12-31T23:00:00.000-05:00"
    late["mapping"]["2"]["message"]["inserted_at"] = "9999-12-31T23:30:00.000-05:00"
    convs, report = read([late, pair("c2")])
    assert report.errors == []
    assert [c.conversation_id for c in convs] == ["c1", "c2"]
    assert convs[0].created_at is None and convs[0].updated_at == datetime(2026, 3, 1, 0, 10, tzinfo=UTC)
    assert [m.created_at for m in convs[0].messages] == [datetime(2026, 3, 1, 0, 0, 1, tzinfo=UTC), None]
    assert report.drift == {"time.out_of_range": 2}
