"""ChatGPT account exports: layouts, the active branch, kinds, tool pairing, drift and damage."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from chatetl.model import MessageKind, Role
from chatetl.readers import Entry, ReadReport, read_entry, read_path
from chatetl.samples import ChatGPTBuilder, chatgpt_conversations, chatgpt_export

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "samples" / "chatgpt" / "librechat-chatgpt-export.json"


def _read(data: bytes, name: str = "conversations.json"):
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes(name, data), report))
    return convs, report


def test_active_branch_follows_current_node_not_last_child():
    convs, report = _read(chatgpt_export())
    assert report.errors == []
    trip = next(c for c in convs if c.title == "Planning a rail trip")
    turns = [m.text for m in trip.visible_turns]
    assert turns[0].startswith("Which is faster")
    assert turns[-1].startswith("The train: more legroom")
    assert not any("Regenerated" in t for t in turns)
    abandoned = [m for m in trip.messages if "Regenerated" in m.text]
    assert len(abandoned) == 1 and not abandoned[0].on_active_branch and abandoned[0].seq is None
    assert [m.seq for m in trip.visible_turns] == [0, 1, 2, 3]
    assert trip.message_count == 4 and len(trip.messages) == 6


def test_kinds_tool_pairing_and_hidden_context():
    convs, _ = _read(chatgpt_export())
    stats = next(c for c in convs if c.title == "Mean of a list")
    kinds = [(m.role, m.kind) for m in stats.active_branch]
    assert kinds == [
        (Role.USER, MessageKind.HIDDEN),  # custom instructions
        (Role.USER, MessageKind.TURN),
        (Role.ASSISTANT, MessageKind.REASONING),
        (Role.ASSISTANT, MessageKind.REASONING),
        (Role.ASSISTANT, MessageKind.TOOL_CALL),
        (Role.TOOL, MessageKind.TOOL_RESULT),
        (Role.ASSISTANT, MessageKind.TURN),
    ]
    call = stats.active_branch[4]
    result = stats.active_branch[5]
    assert call.tool_calls[0].name == "python" and call.tool_calls[0].input == "sum([3, 5, 10]) / 3"
    assert result.tool_results[0].tool_call_id == call.tool_calls[0].id
    assert result.tool_results[0].output == "6.0"
    assert stats.active_branch[-1].model == "o3"


def test_multimodal_citations_and_markers():
    convs, _ = _read(chatgpt_export())
    tram = next(c for c in convs if c.title is None)
    user = tram.visible_turns[0]
    assert user.text == "What tram is this?"
    assert any(a.kind == "image" and a.pointer == "file-service://file-SAMPLE1" for a in user.attachments)
    assert any(a.name == "tram.jpg" and a.mime_type == "image/jpeg" for a in user.attachments)
    answer = tram.visible_turns[-1]
    assert "\ue200" not in answer.text and "cite" not in answer.text
    assert "\ue200cite" in answer.extra["raw_text"]
    assert answer.citations[0].url == "https://example.org/ulf"
    quote = next(m for m in tram.messages if m.content_type == "tether_quote")
    assert quote.created_at is None and quote.citations[0].title == "ULF low-floor tram"


def test_sharded_zip_manifest_and_sidecars_are_not_errors():
    convs, report = _read(chatgpt_export(shards=2), name="export.zip")
    assert len(convs) == 3 and report.files == 2
    assert report.errors == []
    assert report.skipped["chatgpt-sidecar file"] == 1  # export_manifest.json


def test_zip_nested_in_zip():
    inner = chatgpt_export()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("Takeout/chatgpt-export.zip", inner)
    convs, report = _read(buf.getvalue(), name="outer.zip")
    assert len(convs) == 3 and report.errors == []
    assert convs[0].source_file.startswith("outer.zip!Takeout/chatgpt-export.zip!conversations-")


@pytest.mark.skipif(not SAMPLE.exists(), reason="shared samples not present")
def test_real_librechat_sample():
    report = ReadReport()
    convs = list(read_path(SAMPLE, report))
    assert report.errors == [] and len(convs) == 2
    web = convs[0]
    assert web.title == "Conversation 1. Web Search"
    assert web.message_count == 6
    calls = [m for m in web.active_branch if m.kind is MessageKind.TOOL_CALL]
    assert calls and all(m.recipient == "browser" and m.content_type == "code" for m in calls)
    results = [m for m in web.active_branch if m.kind is MessageKind.TOOL_RESULT]
    assert {m.content_type for m in results} == {"tether_browsing_display", "tether_quote"}
    assert all(r.tool_results[0].tool_call_id for r in results)
    assert web.active_branch[0].kind is MessageKind.HIDDEN  # the hidden system node
    assert all("【" not in m.text for m in web.visible_turns)


def test_children_missing_and_unknown_content_type_counted():
    b = ChatGPTBuilder("drift", "Drift", 1_700_000_000.0)
    b.text("user", "hi")
    b.add("assistant", {"content_type": "hologram", "text": "a new thing"})
    b.text("assistant", "visible")
    conv = b.build()
    for node in conv["mapping"].values():
        node.pop("children")
    conv["brand_new_field"] = {"x": 1}
    convs, report = _read(json.dumps([conv]).encode())
    (c,) = convs
    assert [m.text for m in c.visible_turns] == ["hi", "a new thing", "visible"]
    assert report.drift["chatgpt.content_type:hologram"] == 1
    assert report.drift["chatgpt.conversation_field:brand_new_field"] == 1
    assert c.meta["brand_new_field"] == {"x": 1}
    hologram = next(m for m in c.messages if m.content_type == "hologram")
    assert hologram.extra["raw_content"]["text"] == "a new thing"


def test_damaged_trees_are_reported_and_still_read():
    b = ChatGPTBuilder("damaged", "Damaged", 1_700_000_000.0)
    a = b.text("user", "first")
    c2 = b.text("assistant", "second")
    conv = b.build()
    conv["mapping"][a]["parent"] = c2  # a cycle: first <-> second
    conv["mapping"][a]["message"]["id"] = a
    dangling = ChatGPTBuilder("dangling", "Dangling", 1_700_000_000.0)
    dangling.text("user", "orphan")
    d = dangling.build()
    next(iter(v for v in d["mapping"].values() if v["message"]))["parent"] = "not-there"
    convs, report = _read(json.dumps([conv, d]).encode())
    assert len(convs) == 2
    assert any("parent cycle" in e.reason and conv["id"] in e.where for e in report.errors)
    assert any("dangling" in e.reason and d["id"] in e.where for e in report.errors)
    assert [m.text for m in convs[0].active_branch] == ["first", "second"]
    assert [m.text for m in convs[1].visible_turns] == ["orphan"]


def test_truncated_file_keeps_the_conversations_before_the_cut():
    data = json.dumps(chatgpt_conversations()).encode()
    cut = data[: int(len(data) * 0.8)]
    convs, report = _read(cut, name="conversations.json")
    assert 1 <= len(convs) < 3
    assert len(report.errors) == 1
    assert report.errors[0].file == "conversations.json"
    assert "truncated" in report.errors[0].reason


def test_wrong_shape_record_is_reported_and_the_rest_read():
    good = chatgpt_conversations()
    bad = dict(good[1], mapping="not a mapping")
    convs, report = _read(json.dumps([good[0], bad, good[2]]).encode())
    assert len(convs) == 2
    assert len(report.errors) == 1 and "record 1" in report.errors[0].where
    assert report.errors[0].raw is not None  # kept for quarantine
