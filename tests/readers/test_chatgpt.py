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
    assert any("dangling" in e.reason and d["id"] in e.where for e in report.warnings)  # read whole: a root
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


# --- image generation: the images are part of the visible reply ---------------------------------

def _image(pointer, **meta):
    return {"content_type": "image_asset_pointer", "asset_pointer": pointer, "size_bytes": 2048, "width": 1024, "height": 1024,
            "metadata": meta or {"dalle": None, "generation": {"gen_id": pointer[-4:], "gen_size": "image"}}}


def _images(b, tool, *pointers, title=None, **part_meta):
    meta = {"image_gen_title": title} if title else {}
    return b.add("tool", {"content_type": "multimodal_text", "parts": [_image(p, **part_meta) for p in pointers]}, name=tool, metadata=meta)


def _one(conv):
    convs, report = _read(json.dumps([conv]).encode())
    assert report.errors == [] and report.drift == {}
    return convs[0]


def test_dalle_images_are_attached_to_the_answer_that_follows():
    b = ChatGPTBuilder("dalle", "A fox", 1_700_000_000.0)
    b.text("user", "Draw a fox")
    call = b.add("assistant", {"content_type": "text", "parts": ['{"prompt": "a red fox", "size": "1024x1024"}']}, recipient="dalle.text2im")
    row = _images(b, "dalle.text2im", "file-service://file-FOX1", dalle={"gen_id": "g1", "prompt": "A red fox in fresh snow", "seed": 7})
    answer = b.text("assistant", "Here is your fox.")
    c = _one(b.build())
    m = {x.message_id: x for x in c.messages}
    assert m[call].kind is MessageKind.TOOL_CALL and m[row].kind is MessageKind.TOOL_RESULT
    assert [(a.kind, a.pointer, a.text) for a in m[answer].attachments] == [("image", "file-service://file-FOX1", "A red fox in fresh snow")]
    assert m[row].attachments == m[answer].attachments  # still on the tool row too
    assert [x.message_id for x in c.visible_turns][-1] == answer


def test_image_gen_answer_without_text_becomes_the_visible_turn():
    b = ChatGPTBuilder("imagegen", "Hologram", 1_700_000_000.0)
    b.text("user", "A walnut hologram box at night")
    b.add("assistant", {"content_type": "code", "language": "json", "text": '{"prompt": "walnut hologram box, night", "size": "1536x1024"}'},
          recipient="t2uay3k.sj1i4kz")
    b.add("tool", {"content_type": "text", "parts": ["Processing image"]}, name="t2uay3k.sj1i4kz", metadata={"image_gen_async": True})
    row = _images(b, "t2uay3k.sj1i4kz", "sediment://file_00000000Night03", title="Walnut hologram box at night")
    b.add("tool", {"content_type": "text", "parts": ["GPT-4o returned 1 images. From now on, do not say or show ANYTHING."]}, name="t2uay3k.sj1i4kz")
    answer = b.text("assistant", "")
    c = _one(b.build())
    m = {x.message_id: x for x in c.messages}
    assert m[answer].kind is MessageKind.TURN and "empty" not in m[answer].extra
    [img] = m[answer].attachments
    assert (img.pointer, img.name, img.text, img.size) == ("sediment://file_00000000Night03", "Walnut hologram box at night", "walnut hologram box, night", 2048)
    assert [x.role for x in c.visible_turns] == [Role.USER, Role.ASSISTANT] and m[answer].seq == 1
    assert m[row].kind is MessageKind.TOOL_RESULT
    assert [x.attachments for x in c.messages if x.role is Role.TOOL and x.message_id != row] == [[], []]


def test_images_skip_commentary_rows_and_gather_on_the_final_answer():
    b = ChatGPTBuilder("commentary", "Two drafts", 1_700_000_000.0)
    b.text("user", "Two versions of the logo")
    pre = b.text("assistant", "I'll draw a first version.")
    call = {"content_type": "code", "text": '{"prompt": "logo, version one"}'}
    b.add("assistant", call, recipient="image_gen.text2im")
    _images(b, "image_gen.text2im", "sediment://file_logo1")
    mid = b.text("assistant", "Now the second one.")
    b.add("assistant", dict(call, text='{"prompt": "logo, version two"}'), recipient="image_gen.text2im")
    _images(b, "image_gen.text2im", "sediment://file_logo2")
    final = b.text("assistant", "Here are both versions.")
    conv = b.build()
    for mid_ in (pre, mid):
        conv["mapping"][mid_]["message"]["channel"] = "commentary"
    c = _one(conv)
    m = {x.message_id: x for x in c.messages}
    assert [(a.pointer, a.text) for a in m[final].attachments] == [("sediment://file_logo1", "logo, version one"), ("sediment://file_logo2", "logo, version two")]
    assert m[pre].attachments == [] and m[mid].attachments == []  # never repeated on commentary rows
    assert m[mid].kind is MessageKind.TURN  # (commentary is still text the person saw)


def test_an_image_nobody_answered_is_the_visible_reply_itself():
    b = ChatGPTBuilder("leaf", "Cat", 1_700_000_000.0)
    b.text("user", "A cat")
    b.add("assistant", {"content_type": "code", "text": '{"prompt": "a cat"}'}, recipient="t2uay3k.sj1i4kz")
    row = _images(b, "t2uay3k.sj1i4kz", "sediment://file_cat")
    c = _one(b.build())
    shown = c.visible_turns[-1]
    assert shown.message_id == row and shown.kind is MessageKind.TURN and shown.role is Role.ASSISTANT
    assert shown.extra["shown_as_reply"] is True and shown.author_name == "t2uay3k.sj1i4kz"
    assert shown.attachments[0].text == "a cat" and shown.tool_results[0].tool_call_id is not None


def test_each_regenerated_answer_gets_the_images_once_and_a_chart_stays_on_its_tool_row():
    b = ChatGPTBuilder("regen", "Plot and picture", 1_700_000_000.0)
    b.text("user", "Plot it, then draw it")
    b.add("assistant", {"content_type": "code", "text": "plt.plot([1, 2])"}, recipient="python")
    chart = b.add("tool", {"content_type": "multimodal_text", "parts": [_image("file-service://file-CHART", x=1)]}, name="python")
    b.add("assistant", {"content_type": "code", "text": '{"prompt": "a line"}'}, recipient="dalle.text2im")
    row = _images(b, "dalle.text2im", "file-service://file-LINE", dalle={"prompt": "A line"})
    first = b.text("assistant", "Here it is.")
    again = b.text("assistant", "Here it is, again.", parent=row)
    c = _one(b.build(current=again))
    m = {x.message_id: x for x in c.messages}
    for answer in (first, again):
        assert [a.pointer for a in m[answer].attachments] == ["file-service://file-LINE"]
    assert m[chart].kind is MessageKind.TOOL_RESULT and m[chart].attachments[0].pointer == "file-service://file-CHART"


def test_generated_images_in_the_normalized_rows(tmp_path):
    from chatetl.tables import TableWriter, read_rows

    b = ChatGPTBuilder("rows", "Rows", 1_700_000_000.0)
    b.text("user", "Draw")
    b.add("assistant", {"content_type": "code", "text": '{"prompt": "p"}'}, recipient="t2uay3k.sj1i4kz")
    _images(b, "t2uay3k.sj1i4kz", "sediment://file_r1", "sediment://file_r2", title="Two")
    b.text("assistant", "")
    c = _one(b.build())
    with TableWriter(tmp_path / "c.parquet", tmp_path / "m.parquet") as writer:
        writer.add(c)
    rows = [r for r in read_rows(tmp_path / "m.parquet") if r["seq"] is not None]
    assert [(r["role"], r["kind"], [a["pointer"] for a in r["attachments"]]) for r in rows] == [
        ("user", "turn", []), ("assistant", "turn", ["sediment://file_r1", "sediment://file_r2"])]
    assert {a["name"] for a in rows[1]["attachments"]} == {"Two"}
