"""xAI Grok export reader: the one object streamed, responses, branches, reasoning, tools, damage, detection, zip, tables."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pyarrow.parquet as pq
from reader_inputs import zip_bytes

from chatetl.model import MessageKind, Role, Source
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms.grok import mongo_time
from chatetl.tables import TableWriter

T0 = 1772323200000  # 2026-03-01T00:00:00Z in milliseconds


def resp(rid, sender, message, second, parent=None, **fields):
    response = {"_id": rid, "conversation_id": "c", "message": message, "sender": sender,
                "create_time": {"$date": {"$numberLong": str(T0 + second * 1000)}}, "model": "", **fields}
    if parent is not None:
        response["parent_response_id"] = parent
    return {"response": response, "share_link": None}


def conv(cid, responses, **fields):
    conversation = {"id": cid, "user_id": "u-1", "create_time": "2026-03-01T00:00:00.123456Z",
                    "modify_time": "2026-03-01T00:05:00.000Z", "title": f"Chat {cid}", "summary": "",
                    "starred": False, "temporary": False, "leaf_response_id": None, **fields}
    return {"conversation": conversation, "responses": responses}


def pair(cid="c1"):
    return conv(cid, [
        resp(f"{cid}-q", "human", "Is Pluto a planet?", 1),
        resp(f"{cid}-a", "assistant", "A dwarf planet.", 4, parent=f"{cid}-q", model="grok-3"),
    ])


def export(*convs, **sections):
    return {"conversations": list(convs), "projects": [], "tasks": [], "media_posts": [], **sections}


def read(data, name="prod-grok-backend.json"):
    report = ReadReport()
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return list(read_entry(Entry.from_bytes(name, raw), report)), report


def by_id(c):
    return {m.message_id: m for m in c.messages}


# --- conversations and responses --------------------------------------------------------------

def test_an_export_reads_every_conversation_with_its_fields():
    convs, report = read(export(pair("c1"), pair("c2")))
    assert report.errors == [] and report.drift == {}
    assert report.formats == {"grok": 1} and report.conversations == 2 and report.messages == 4
    c = convs[0]
    assert c.source is Source.GROK and c.platform == "grok" and c.key == "grok:c1"
    assert c.url == "https://grok.com/chat/c1" and c.title == "Chat c1"
    assert c.created_at == datetime(2026, 3, 1, 0, 0, 0, 123456, tzinfo=UTC)
    assert c.updated_at == datetime(2026, 3, 1, 0, 5, tzinfo=UTC)
    assert c.meta == {"user_id": "u-1"}  # empty and false fields are left out
    assert [(m.role, m.kind, m.text, m.seq, m.model) for m in c.visible_turns] == [
        (Role.USER, MessageKind.TURN, "Is Pluto a planet?", 0, None),
        (Role.ASSISTANT, MessageKind.TURN, "A dwarf planet.", 1, "grok-3"),
    ]
    assert c.visible_turns[1].created_at == datetime(2026, 3, 1, 0, 0, 4, tzinfo=UTC)
    assert c.visible_turns[1].parent_id == "c1-q"


def test_senders_in_any_case_and_model_names_are_roles():
    c = conv("c1", [
        resp("1", "Human", "hi", 1),
        resp("2", "ASSISTANT", "hello", 2, parent="1"),
        resp("3", "human", "and?", 3, parent="2"),
        resp("4", "grok-3", "and so on", 4, parent="3"),
        resp("5", "Robot", "who?", 5, parent="4"),
    ])
    convs, report = read(export(c))
    assert [m.role for m in convs[0].messages] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT, Role.ASSISTANT]
    msgs = by_id(convs[0])
    assert msgs["4"].extra["raw_sender"] == "grok-3" and "raw_sender" not in msgs["2"].extra
    assert report.drift == {"grok.sender:Robot": 1} and msgs["5"].extra["raw_sender"] == "Robot"


def test_times_as_iso_text_millis_and_mongo_dates():
    ms = 1772323205123
    expected = datetime(2026, 3, 1, 0, 0, 5, 123000, tzinfo=UTC)
    assert mongo_time({"$date": {"$numberLong": str(ms)}}) == expected
    assert mongo_time({"$date": ms}) == expected
    assert mongo_time({"$date": "2026-03-01T00:00:05.123Z"}) == expected
    assert mongo_time("2026-03-01T00:00:05.123Z") == expected
    assert mongo_time({"$date": {"$numberLong": "soon"}}) is None and mongo_time(None) is None


# --- branches ---------------------------------------------------------------------------------

def _branched(**fields):
    return conv("c1", [
        resp("q", "human", "Name a color", 1),
        resp("a1", "assistant", "Red", 3, parent="q"),
        resp("a2", "assistant", "Blue", 9, parent="q"),  # regenerated: the latest
    ], **fields)


def test_the_active_leaf_is_leaf_response_id_when_present():
    convs, report = read(export(_branched(leaf_response_id="a1")))
    assert report.errors == []
    assert convs[0].current_node == "a1"
    assert [m.message_id for m in convs[0].active_branch] == ["q", "a1"]


def test_without_leaf_response_id_the_latest_leaf_is_active():
    convs, _ = read(export(_branched()))
    assert convs[0].current_node == "a2"
    assert [m.text for m in convs[0].visible_turns] == ["Name a color", "Blue"]


def test_a_leaf_response_id_the_export_lacks_is_kept_and_the_latest_is_used():
    convs, report = read(export(_branched(leaf_response_id="gone")))
    assert report.errors == []  # not damage: the export often names a response it does not hold
    assert convs[0].current_node == "a2" and convs[0].meta["leaf_response_id"] == "gone"


def test_responses_without_parents_are_chained_in_time_order():
    c = conv("c1", [
        resp("2", "assistant", "second", 5),
        resp("1", "human", "first", 1),
        resp("3", "human", "third", 8),
    ])
    convs, _ = read(export(c))
    assert [m.text for m in convs[0].visible_turns] == ["first", "second", "third"]
    assert by_id(convs[0])["2"].parent_id == "1"


# --- reasoning, tools, citations, attachments -------------------------------------------------

CARD = ("<xai:tool_usage_card><xai:tool_usage_card_id>card-1</xai:tool_usage_card_id><xai:tool_name>web_search</xai:tool_name>"
        '<xai:tool_args><![CDATA[{"query": "pluto status"}]]></xai:tool_args></xai:tool_usage_card>')


def test_thinking_tool_cards_steps_and_web_results():
    answer = resp(
        "a", "assistant", 'Pluto is a dwarf planet.<grok:render card_id="x1" card_type="citation_card"></grok:render>', 9,
        parent="q", model="grok-4",
        thinking_trace=f"Checking the IAU definition.\n{CARD}\nDone.",
        agent_thinking_traces=[{"agent_id": "Agent 1", "thinking_trace": "A second view."}],
        steps=[{"tag_order": ["header", "summary"], "tagged_text": {"header": "Searching", "summary": "Looked it up"},
                "tool_usage_results": [{"tool_usage_card_id": "card-1", "web_results": [
                    {"url": "https://example.org/iau", "title": "IAU 2006", "preview": "planet definition"}]}]}],
        web_search_results=[{"url": "https://example.org/iau", "title": "IAU", "preview": "dup"},
                            {"url": "https://news.example.com/p", "title": "News", "description": "a story"}],
        cited_web_search_results=[{"url": "https://cited.example.net/c", "title": "Cited", "preview": "quoted", "site_name": "Cited Site"}],
        card_attachments_json=[json.dumps({"id": "x1", "cardType": "citation_card", "url": "https://card.example.org/x"}),
                               json.dumps({"id": "x2", "cardType": "image_card", "image": {"link": "https://img.example/1.png"}})],
        xpost_ids=["1234567890"],
        thinking_start_time={"$date": {"$numberLong": str(T0 + 5000)}},
    )
    convs, report = read(export(conv("c1", [resp("q", "human", "Is Pluto a planet?", 1), answer])))
    assert report.errors == [] and report.drift == {}
    a = by_id(convs[0])["a"]
    assert a.kind is MessageKind.TURN and a.model == "grok-4"
    assert a.text == "Pluto is a dwarf planet."
    assert a.extra["raw_text"].endswith("</grok:render>")
    assert a.reasoning == "Checking the IAU definition.\n\nDone.\n\nA second view.\n\nSearching\nLooked it up"
    assert [(c.id, c.name, c.input) for c in a.tool_calls] == [("card-1", "web_search", '{"query": "pluto status"}')]
    assert [(r.tool_call_id, r.name, r.output) for r in a.tool_results] == [
        ("card-1", "web_search", "IAU 2006\nhttps://example.org/iau\nplanet definition")]
    assert [(c.url, c.title, c.source) for c in a.citations] == [
        ("https://example.org/iau", "IAU 2006", "example.org"),  # each URL once, where first found
        ("https://cited.example.net/c", "Cited", "Cited Site"),
        ("https://news.example.com/p", "News", "news.example.com"),
        ("https://card.example.org/x", None, "card.example.org"),
        ("https://x.com/i/status/1234567890", None, "x.com"),
    ]
    assert a.extra["cards"] == [{"id": "x2", "cardType": "image_card", "image": {"link": "https://img.example/1.png"}}]
    assert a.extra["thinking_start_time"] == {"$date": {"$numberLong": str(T0 + 5000)}}


def test_a_response_of_thinking_alone_is_reasoning_and_of_a_tool_card_a_tool_call():
    c = conv("c1", [
        resp("q", "human", "Q", 1),
        resp("t", "assistant", "", 2, parent="q", thinking_trace="Only thoughts."),
        resp("k", "assistant", "", 3, parent="t", thinking_trace=CARD),
        resp("e", "assistant", "", 4, parent="k", error="Failed to respond."),
    ])
    convs, report = read(export(c))
    msgs = by_id(convs[0])
    assert msgs["t"].kind is MessageKind.REASONING and msgs["t"].text == "Only thoughts."
    assert msgs["k"].kind is MessageKind.TOOL_CALL and msgs["k"].text == '{"query": "pluto status"}'
    assert msgs["e"].kind is MessageKind.HIDDEN and msgs["e"].extra == {"error": "Failed to respond.", "empty": True}
    assert convs[0].message_count == 1 and report.errors == []


def test_uploads_images_and_generated_images_are_attachments():
    c = conv("c1", [
        resp("q", "human", "Describe these", 1, file_attachments=["asset-1", "asset-2"],
             file_attachments_metadata=[{"file_metadata_id": "asset-1", "file_mime_type": "image/png", "file_name": "cat.png"}],
             image_attachments=["https://assets.example/u/cat.png"]),
        resp("a", "assistant", "", 5, parent="q", generated_image_urls=["users/u-1/generated/img-1/image.jpg"]),
    ])
    convs, report = read(export(c))
    assert report.errors == [] and report.drift == {}
    q, a = by_id(convs[0])["q"], by_id(convs[0])["a"]
    assert [(x.kind, x.id, x.name, x.mime_type, x.pointer) for x in q.attachments] == [
        ("image", "asset-1", "cat.png", "image/png", "prod-mc-asset-server/asset-1/content"),
        ("file", "asset-2", None, None, "prod-mc-asset-server/asset-2/content"),
        ("image", None, None, None, "https://assets.example/u/cat.png"),
    ]
    assert a.kind is MessageKind.TURN and a.text == ""  # an image alone is something a person saw
    assert [(x.kind, x.pointer) for x in a.attachments] == [("image", "users/u-1/generated/img-1/image.jpg")]
    assert convs[0].message_count == 2


def test_unknown_fields_are_drift_kept_where_they_came():
    c = conv("c1", [resp("q", "human", "Q", 1, sparkle=True, steps=[{"tagged_text": {"summary": "s"}, "glow": 1}])], new_flag="x")
    c["shelf"] = "top"
    c["responses"][0]["reaction"] = "like"
    convs, report = read(export(c))
    assert report.errors == []
    assert report.drift == {
        "grok.conversation_field:new_flag": 1, "grok.record_field:shelf": 1, "grok.response_field:sparkle": 1,
        "grok.response_wrapper_field:reaction": 1, "grok.step_field:glow": 1,
    }
    conv_ = convs[0]
    assert conv_.meta["new_flag"] == "x" and conv_.meta["shelf"] == "top"
    q = by_id(conv_)["q"]
    assert q.extra["sparkle"] is True and q.extra["reaction"] == "like"
    assert q.extra["step_fields"] == [{"step": 0, "glow": 1}]


# --- damage -----------------------------------------------------------------------------------

def test_damaged_conversations_are_reported_with_their_place_and_the_rest_is_read():
    no_id = pair("c-x")
    del no_id["conversation"]["id"]
    bad_response = pair("c3")
    bad_response["responses"].insert(1, "garbage")
    convs, report = read(export(pair("c1"), "not an item", no_id, bad_response))
    assert [c.conversation_id for c in convs] == ["c1", "c3"]
    assert [(e.where, e.reason) for e in report.errors] == [
        ("conversations[1]", "ValueError: expected a {conversation, responses} object, got str"),
        ("conversations[2]", "ValueError: conversation has no id"),
        ("conversations[3] (conversation c3) response 1", "response is not an object (got str)"),
    ]
    assert report.errors[1].raw is not None  # kept for quarantine
    assert len(convs[1].messages) == 2


def test_a_file_cut_short_keeps_what_came_before():
    data = json.dumps(export(pair("c1"), pair("c2"))).encode()
    cut = data[: data.index(b'"c2-a"')]
    convs, report = read(cut)
    assert [c.conversation_id for c in convs] == ["c1"]
    assert len(report.errors) == 1 and report.errors[0].where == "after conversations[0]"
    assert "truncated" in report.errors[0].reason


# --- streaming --------------------------------------------------------------------------------

class _Counting(io.BytesIO):
    """A file that counts the bytes read from it."""

    def __init__(self, data: bytes, seen: list[int]) -> None:
        super().__init__(data)
        self.seen = seen

    def read(self, n=-1):
        chunk = super().read(n)
        self.seen[0] += len(chunk)
        return chunk


def test_conversations_stream_one_at_a_time_from_the_one_object():
    filler = "word " * 400
    convs = [conv(f"c{i}", [resp(f"{i}-q", "human", filler, 1), resp(f"{i}-a", "assistant", filler, 2, parent=f"{i}-q")]) for i in range(3000)]
    data = json.dumps(export(*convs)).encode()
    seen = [0]
    entry = Entry(name="prod-grok-backend.json", opener=lambda: _Counting(data, seen), size=len(data))
    report = ReadReport()
    stream = read_entry(entry, report)
    first = next(stream)
    assert first.conversation_id == "c0"
    assert seen[0] < len(data) / 2  # the first conversation came out long before the file was read
    assert sum(1 for _ in stream) == 2999 and report.errors == []


def test_conversations_after_other_sections_are_read_too():
    data = {"projects": [{"id": "p1", "name": "Garden"}], "conversations": [pair("c1"), pair("c2")], "tasks": []}
    convs, report = read(data)
    assert report.errors == [] and [c.conversation_id for c in convs] == ["c1", "c2"]
    assert report.formats == {"grok": 1}


def test_pretty_printed_and_one_export_per_line_read_alike():
    pretty, report = read(b"\xef\xbb\xbf" + json.dumps(export(pair("c1"), pair("c2")), indent=2).encode())
    assert report.errors == [] and [c.conversation_id for c in pretty] == ["c1", "c2"]
    lines = json.dumps(export(pair("c1"))).encode() + b"\n" + json.dumps(export(pair("c2"))).encode() + b"\n"
    assert _detect(lines, "exports.jsonl") == (Format.GROK, Shape.JSONL)
    convs, report = read(lines, "exports.jsonl")
    assert report.errors == [] and [c.conversation_id for c in convs] == ["c1", "c2"]


def test_an_export_without_conversations_reads_none_and_no_error():
    convs, report = read(export())
    assert convs == [] and report.errors == [] and report.formats == {"grok": 1}


# --- detection --------------------------------------------------------------------------------

def _detect(data, name="prod-grok-backend.json"):
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return detect(Entry.from_bytes(name, raw))


def test_grok_is_detected_and_never_taken_for_sharegpt():
    assert _detect(export(pair())) == (Format.GROK, Shape.OBJECT)
    assert _detect(export()) == (Format.GROK, Shape.OBJECT)
    big = pair()
    big["responses"][0]["response"]["message"] = "x" * 200_000  # the head ends inside the first conversation
    assert _detect(export(big)) == (Format.GROK, Shape.OBJECT)
    pretty = json.dumps(export(pair()), indent=2).encode()
    assert _detect(pretty) == (Format.GROK, Shape.OBJECT)


def test_sharegpt_is_never_taken_for_grok():
    record = {"id": "s1", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}
    assert _detect([record], "data.json") == (Format.SHAREGPT, Shape.ARRAY)
    assert _detect(record, "one.json") == (Format.SHAREGPT, Shape.OBJECT)
    lines = b"\n".join(json.dumps(r).encode() for r in (record, {**record, "id": "s2"})) + b"\n"
    assert _detect(lines, "data.jsonl") == (Format.SHAREGPT, Shape.JSONL)


# --- archive and tables -----------------------------------------------------------------------

def test_the_export_zip_reads_beside_its_other_files():
    base = "ttl/30d/export_data/00000000-0000-4000-8000-000000000001/"
    data = zip_bytes({
        base + "prod-grok-backend.json": json.dumps(export(pair("c1"))).encode(),
        base + "prod-mc-auth-mgmt-api.json": json.dumps({"user": {"givenName": "A"}, "sessions": []}).encode(),
        base + "prod-mc-billing.json": json.dumps({"credits": 0}).encode(),
        base + "prod-mc-asset-server/asset-1/content": b"print('uploaded code')\n",
        base + "prod-mc-asset-server/asset-2/content": b"\x89PNG\r\n\x1a\n\x00\x00binary",
    })
    convs, report = read(data, "grok-export.zip")
    assert report.errors == [] and report.drift == {}
    assert [c.conversation_id for c in convs] == ["c1"]
    assert convs[0].source_file == f"grok-export.zip!{base}prod-grok-backend.json"
    assert report.formats == {"grok": 1}


def test_the_normalized_tables_hold_its_rows(tmp_path):
    convs, _ = read(export(_branched(leaf_response_id="a1")))
    with TableWriter(tmp_path / "c.parquet", tmp_path / "m.parquet") as writer:
        for c in convs:
            writer.add(c, upload_key="raw/u1.json")
    (row,) = pq.read_table(tmp_path / "c.parquet").to_pylist()
    assert (row["conversation_key"], row["source"], row["platform"], row["url"]) == (
        "grok:c1", "grok", "grok", "https://grok.com/chat/c1")
    assert (row["current_node"], row["message_count"], row["total_messages"]) == ("a1", 2, 3)
    msgs = pq.read_table(tmp_path / "m.parquet").to_pylist()
    assert [(m["message_id"], m["parent_id"], m["role"], m["on_active_branch"], m["seq"]) for m in msgs] == [
        ("q", None, "user", True, 0), ("a1", "q", "assistant", True, 1), ("a2", "q", "assistant", False, None)]


def test_the_built_in_sample_reads_cleanly():
    from chatetl.samples.grok import sample

    name, data = sample()
    convs, report = read(data, name)
    assert report.errors == [] and report.drift == {} and len(convs) == 2
    assert any(len(c.messages) > len(c.active_branch) for c in convs)  # one has a branch
    assert all(c.message_count >= 2 for c in convs)
