"""An upload's attachments: one row per file, its bytes stored once by content, a missing file said so."""

from __future__ import annotations

import hashlib
import json

from attachments.layouts import (
    DAY,
    GENERATED,
    LEGACY,
    MISSING,
    UPLOADED,
    chatgpt_conversation,
    chatgpt_zip,
    claude_zip,
    conversations,
    image_part,
    ingested,
    png,
)

from chatetl.layout import ATTACHMENTS_PREFIX, attachment_key
from chatetl.samples import gemini, grok
from chatetl.samples.common import zip_files
from chatetl.storage import LocalObjectStore


def _attachments(store, result):
    return {m.message_id: m.attachments for conv in conversations(store, result) for m in conv.messages if m.attachments}


def test_chatgpt_attachments_one_row_each_bytes_stored_once(tmp_path):
    store = LocalObjectStore(tmp_path)
    result = ingested(store, "raw/chatgpt.zip", chatgpt_zip())
    messages = _attachments(store, result)
    rows = [a for atts in messages.values() for a in atts]
    by_id = {a.id: a for a in rows}
    assert set(by_id) == {UPLOADED, LEGACY, MISSING, GENERATED}
    assert [len(atts) for atts in messages.values() if any(a.id == UPLOADED for a in atts)] == [3]  # one row per upload
    assert all(len(atts) == len({a.id for a in atts}) for atts in messages.values())
    assert by_id[UPLOADED].name == "photo.png" and by_id[UPLOADED].content_hash == hashlib.sha256(png(1)).hexdigest()
    assert by_id[LEGACY].content_hash == hashlib.sha256(png(2)).hexdigest()  # not the member whose id merely starts alike
    assert by_id[GENERATED].content_hash == hashlib.sha256(png(3)).hexdigest()
    assert by_id[UPLOADED].mime_type == "image/png" and by_id[UPLOADED].size == len(png(1))
    assert by_id[MISSING].content_hash is None and not by_id[MISSING].in_export and by_id[MISSING].name == "lost.png"
    stored = sorted(i.key for i in store.list(ATTACHMENTS_PREFIX))
    assert stored == sorted(attachment_key(hashlib.sha256(png(n)).hexdigest()) for n in (1, 2, 3))
    assert store.get_bytes(attachment_key(by_id[UPLOADED].content_hash)) == png(1)
    assert (result.attachments.attachments, result.attachments.in_export, result.attachments.new_files) == (5, 4, 3)  # (the drawn image also on the reply)

    again = ingested(store, "raw/chatgpt-again.zip", chatgpt_zip())  # the same export uploaded again: nothing new
    assert again.attachments.new_files == 0 and again.attachments.in_export == 4
    assert sorted(i.key for i in store.list(ATTACHMENTS_PREFIX)) == stored


def test_claude_attachment_and_file_are_one_row_not_in_export(tmp_path):
    store = LocalObjectStore(tmp_path)
    result = ingested(store, "raw/claude.zip", claude_zip())
    (att,) = _attachments(store, result)["m-1"]
    assert (att.name, att.mime_type, att.text, att.content_hash) == ("spec.txt", "txt", "The widget must fold twice.", None)


def test_grok_asset_content_resolved(tmp_path):
    store = LocalObjectStore(tmp_path)
    key, data = grok.sample()
    result = ingested(store, key, data)
    rows = [a for atts in _attachments(store, result).values() for a in atts]
    assert [a.content_hash for a in rows] == [hashlib.sha256(grok.PHOTO).hexdigest()]
    assert rows[0].mime_type == "image/jpeg" or rows[0].mime_type is not None


def test_gemini_file_beside_the_activity_file_resolved(tmp_path):
    store = LocalObjectStore(tmp_path)
    key, data = gemini.sample()
    result = ingested(store, key, data)
    rows = [a for atts in _attachments(store, result).values() for a in atts]
    stored = [a for a in rows if a.content_hash]
    assert [a.content_hash for a in stored] == [hashlib.sha256(gemini.PNG).hexdigest()]
    assert stored[0].mime_type == "image/png" and stored[0].kind == "image"


def test_hostile_names_never_choose_a_path(tmp_path):
    """A pointer with `..` or `/` never matches, a member with an unsafe name is only known by its safe one,
    and nothing is written outside the attachment prefix."""
    conv = chatgpt_conversation("hostile")
    user = next(n for n in conv["mapping"].values() if n["message"] and n["message"]["author"]["role"] == "user")
    user["message"]["content"]["parts"][:3] = [image_part("sediment://../../etc/passwd"), image_part("file-service://x/../file-EVIL"),
                                               image_part(f"sediment://{UPLOADED}")]
    data = zip_files({"conversations.json": json.dumps([conv]), f"../../{UPLOADED}.dat": png(1), "etc/passwd": b"root"})
    store = LocalObjectStore(tmp_path / "bucket")
    result = ingested(store, "raw/hostile.zip", data)
    rows = {a.pointer: a for atts in _attachments(store, result).values() for a in atts}
    assert rows["sediment://../../etc/passwd"].content_hash is None and rows["file-service://x/../file-EVIL"].content_hash is None
    assert rows[f"sediment://{UPLOADED}"].content_hash == hashlib.sha256(png(1)).hexdigest()  # (the member `../../<id>.dat` as `<id>.dat`)
    keys = [i.key for i in store.list("") if not i.key.startswith(("raw/", "normalized/", "quarantine/", "state/"))]
    assert keys == [attachment_key(hashlib.sha256(png(1)).hexdigest())]
    assert not (tmp_path / "etc").exists()


def test_a_file_leaves_with_the_last_upload_that_refers_to_it(tmp_path):
    """Two uploads of one export share its files; deleting one keeps them, deleting both takes them (and their
    exported copies) away; a new version no longer holding a file lets it go."""
    from chatetl.exports.attachments import publish_files
    from chatetl.ingest.partition import retract
    from chatetl.layout import EXPORT_FILES_PREFIX, upload_id

    store = LocalObjectStore(tmp_path)
    first = ingested(store, "raw/a.zip", chatgpt_zip())
    ingested(store, "raw/b.zip", chatgpt_zip())
    for conv in conversations(store, first):
        publish_files(store, conv)
    files = sorted(i.key for i in store.list(ATTACHMENTS_PREFIX))
    assert len(files) == 3 and len(list(store.list(EXPORT_FILES_PREFIX))) == 3
    assert retract(store, DAY, upload_id("raw/a.zip"), "raw/a.zip", "deleted") and sorted(i.key for i in store.list(ATTACHMENTS_PREFIX)) == files
    gone = retract(store, DAY, upload_id("raw/b.zip"), "raw/b.zip", "deleted")
    assert not list(store.list(ATTACHMENTS_PREFIX)) and not list(store.list(EXPORT_FILES_PREFIX))
    assert set(files) <= set(gone)

    ingested(store, "raw/c.zip", chatgpt_zip())
    fewer = zip_files({"conversations.json": json.dumps([chatgpt_conversation()]), f"{UPLOADED}.dat": png(1)})
    ingested(store, "raw/c.zip", fewer)  # its new version holds one file of the three
    assert [i.key for i in store.list(ATTACHMENTS_PREFIX)] == [attachment_key(hashlib.sha256(png(1)).hexdigest())]


def test_open_webui_data_url_images_stored_decoded_once(tmp_path):
    from attachments.layouts import open_webui_json

    store = LocalObjectStore(tmp_path)
    images = [png(21), png(22, pad=5000)]
    for key, data in (("raw/owui.json", open_webui_json(images)), ("raw/owui.zip", zip_files({"chats/export.json": open_webui_json(images, escaped=True)}))):
        result = ingested(store, key, data)
        (atts,) = _attachments(store, result).values()
        kept = [a for a in atts if a.in_export]
        assert [a.content_hash for a in kept] == [hashlib.sha256(d).hexdigest() for d in images], key
        assert all(a.kind == "image" and a.mime_type == "image/png" for a in kept)
        assert [a.size for a in kept] == [len(d) for d in images]
        assert len(atts) == 3 and not atts[2].in_export  # (the damaged URL: a row, no bytes)
        for a, d in zip(kept, images, strict=True):
            assert store.get_bytes(attachment_key(a.content_hash)) == d
        assert "base64" not in json.dumps([a.model_dump() for a in atts])  # the tables never hold the bytes
    assert len(list(store.list(ATTACHMENTS_PREFIX))) == 2  # the second upload stored nothing new


def test_markdown_images_written_as_data_urls_are_stored_and_leave_the_text(tmp_path):
    from attachments.layouts import markdown_chat, open_webui_markdown_json

    store = LocalObjectStore(tmp_path)
    images = [png(23), png(24, pad=3000)]
    for key, data in (("raw/owui.json", open_webui_markdown_json(images)), ("raw/chat.md", markdown_chat(images))):
        result = ingested(store, key, data)
        (atts,) = _attachments(store, result).values()
        kept = [a for a in atts if a.in_export]
        assert [a.content_hash for a in kept] == [hashlib.sha256(d).hexdigest() for d in images], key
        assert [a.name for a in kept] == ([f"robin {i}" for i in range(2)] if key.endswith(".json") else [f"chart {i}" for i in range(2)])
        for a, d in zip(kept, images, strict=True):
            assert store.get_bytes(attachment_key(a.content_hash)) == d
        (conv,) = conversations(store, result)
        answer = conv.messages[-1]
        assert "base64" not in answer.text and answer.text.startswith(("Here it is:", "Here:")), key
        if key.endswith(".json"):
            assert answer.text.endswith("Enjoy.") and len(atts) == 3 and not atts[2].in_export  # (damaged: a row, no bytes)
    assert len(list(store.list(ATTACHMENTS_PREFIX))) == 2  # the same bytes, stored once


def test_same_bytes_uploaded_again_are_not_read_again_unless_a_file_left(tmp_path, monkeypatch):
    from attachments.layouts import text_file_zip

    from chatetl.attachments import resolve

    store = LocalObjectStore(tmp_path)
    first = ingested(store, "raw/a/chatgpt.zip", chatgpt_zip())
    ingested(store, "raw/a/lechat.zip", text_file_zip())
    read = []
    real = resolve.store_member
    monkeypatch.setattr(resolve, "store_member", lambda store, member, workdir=None: read.append(member.name) or real(store, member, workdir))
    again = ingested(store, "raw/b/chatgpt-copy.zip", chatgpt_zip())  # the same bytes under another name
    assert read == [] and again.attachments.in_export == first.attachments.in_export == 4
    assert _attachments(store, again) == _attachments(store, first)
    again = ingested(store, "raw/b/lechat-copy.zip", text_file_zip())
    assert len(read) == 2 and again.attachments.in_export == 2  # (a text file and a PDF: their words are read again)
    read.clear()
    gone = next(a.content_hash for atts in _attachments(store, first).values() for a in atts if a.content_hash)
    store.delete(attachment_key(gone))  # a file that left the bucket meanwhile is read and stored again
    ingested(store, "raw/c/chatgpt-copy.zip", chatgpt_zip())
    assert len(read) == 1 and store.head(attachment_key(gone)) is not None
    other = zip_files({"conversations.json": json.dumps([chatgpt_conversation()]), f"{UPLOADED}.dat": png(50)})
    result = ingested(store, "raw/c/other.zip", other)  # other bytes, the same member names: read
    assert hashlib.sha256(png(50)).hexdigest() in result.attachments.hashes
