"""Review of the readers, storage and normalized tables: damaged and hostile inputs.

Each test is a bug found in review: a damaged zip member crashing the whole upload, a zip
bomb member, a JSONL line without end, a file of bad lines held in memory, a YAML
"billion laughs", two states of one chat read back with mixed messages, symlinks out of a
local store. The S3 test runs against the real S3 server of the test services.
"""

from __future__ import annotations

import io
import json
import os
import time
import zipfile

import pytest

from chatetl import tables as normalize_mod
from chatetl.model import Conversation, Message, Role, Source
from chatetl.readers import Entry, ReadReport, archive, jsonstream, read_entry, read_path
from chatetl.readers import report as report_mod
from chatetl.storage import LocalObjectStore


def _chatgpt(conv_id: str, text: str = "hello") -> dict:
    return {
        "id": conv_id,
        "title": f"title {conv_id}",
        "create_time": 1767225600.0,
        "update_time": 1767225700.0,
        "current_node": "m1",
        "mapping": {
            "m1": {
                "id": "m1",
                "parent": None,
                "children": [],
                "message": {"id": "m1", "author": {"role": "user"}, "content": {"content_type": "text", "parts": [text]}},
            }
        },
    }


def _zip(files: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _damaged_zip() -> bytes:
    """conversations-000.json with a flipped byte (bad CRC), conversations-001.json intact."""
    bad = json.dumps([_chatgpt("c-bad", "x" * 5000)]).encode()
    good = json.dumps([_chatgpt("c-good")]).encode()
    data = bytearray(_zip({"conversations-000.json": bad, "conversations-001.json": good}))
    i = data.find(b"x" * 5000) + 2500
    data[i] = ord("y")
    return bytes(data)


def test_damaged_zip_member_is_reported_and_the_rest_is_read():
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes("up.zip", _damaged_zip()), report))
    assert [c.conversation_id for c in convs] == ["c-good"]
    assert len(report.errors) == 1
    err = report.errors[0]
    assert err.file == "up.zip!conversations-000.json"
    assert "damaged zip member" in err.reason and "CRC" in err.reason


def test_zip_member_over_the_size_cap_is_refused_unread(monkeypatch):
    monkeypatch.setattr(archive, "MAX_MEMBER_BYTES", 10_000)
    bomb = b"[" + b" " * 200_000 + b"]"
    data = _zip({"a-bomb.json": bomb, "conversations.json": json.dumps([_chatgpt("c1")]).encode()}, zipfile.ZIP_DEFLATED)
    assert len(data) < 10_000  # small on the wire, big unpacked
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes("up.zip", data), report))
    assert [c.conversation_id for c in convs] == ["c1"]
    assert [e.file for e in report.errors] == ["up.zip!a-bomb.json"]
    assert "200002 bytes" in report.errors[0].reason and "not read" in report.errors[0].reason


def test_nested_zip_over_the_size_cap_is_not_copied(monkeypatch, tmp_path):
    monkeypatch.setattr(archive, "MAX_MEMBER_BYTES", 50_000)
    inner = _zip({"filler.bin": b"\0" * 100_000}, zipfile.ZIP_STORED)
    outer = _zip({"inner.zip": inner}, zipfile.ZIP_DEFLATED)
    report = ReadReport()
    assert list(read_entry(Entry.from_bytes("up.zip", outer), report)) == []
    assert [e.file for e in report.errors] == ["up.zip!inner.zip"]


def _claude_code_line(i: int) -> bytes:
    return json.dumps(
        {
            "type": "user", "uuid": f"u{i}", "parentUuid": f"u{i - 1}" if i else None, "sessionId": "s1",
            "timestamp": f"2026-01-01T00:00:{i:02d}Z", "message": {"role": "user", "content": f"prompt {i}"},
        }
    ).encode() + b"\n"


def test_jsonl_line_longer_than_the_cap_is_skipped_with_its_line_number(monkeypatch):
    monkeypatch.setattr(jsonstream, "MAX_LINE_BYTES", 4096)
    long_line = b'{"type": "user", "junk": "' + b"z" * 50_000 + b'"}\n'
    data = _claude_code_line(0) + _claude_code_line(1) + long_line + _claude_code_line(2)
    report = ReadReport()
    records = list(jsonstream.iter_records(Entry.from_bytes("s1.jsonl", data), jsonstream.Layout.JSONL, report))
    assert [where for where, _ in records] == ["line 1", "line 2", "line 4"]
    assert [str(e) for e in report.errors] == ["s1.jsonl (line 3): line longer than 4096 bytes: skipped"]
    # a line of exactly the cap still reads
    exact = b'{"k": "' + b"a" * (4096 - 10) + b'"}\n'
    assert len(exact) == 4096
    report = ReadReport()
    assert len(list(jsonstream.iter_records(Entry.from_bytes("x.jsonl", exact), jsonstream.Layout.JSONL, report))) == 1
    assert not report.errors


def test_bad_parts_kept_for_quarantine_are_bounded(monkeypatch):
    monkeypatch.setattr(report_mod, "MAX_RAW_BYTES", 1000)
    report = ReadReport()
    for i in range(50):
        report.error("f.jsonl", f"line {i}", "invalid JSON", raw=b"x" * 100)
    assert len(report.errors) == 50  # every error is still reported
    assert sum(1 for e in report.errors if e.raw is not None) == 10
    assert report.raw_bytes == 1000 and report.raw_dropped == 40


def test_yaml_aliases_are_refused_not_expanded():
    lines = ["platform: chatgpt", "title: t", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("messages:\n  - role: user\n    text: hi\n    extra: *a8")
    report = ReadReport()
    start = time.monotonic()
    convs = list(read_entry(Entry.from_bytes("laughs.yaml", ("\n".join(lines) + "\n").encode()), report))
    assert time.monotonic() - start < 5
    assert convs == []
    assert len(report.errors) == 1
    assert report.errors[0].file == "laughs.yaml" and report.errors[0].where == "line 4, column 10"
    assert "aliases are not allowed" in report.errors[0].reason


def test_yaml_without_aliases_still_reads():
    doc = "platform: chatgpt\ntitle: yes\nmessages:\n  - role: user\n    text: |\n      *not an alias* &nor an anchor\n"
    report = ReadReport()
    [conv] = list(read_entry(Entry.from_bytes("ok.yaml", doc.encode()), report))
    assert not report.errors
    assert conv.title == "yes"
    assert conv.messages[0].text == "*not an alias* &nor an anchor"


def _conv(conv_id: str, n: int, updated: float) -> Conversation:
    from datetime import datetime, timezone

    msgs = [Message(message_id=f"{conv_id}:{updated}:{i}", parent_id=None, role=Role.USER, text=f"m{i}") for i in range(n)]
    return Conversation(
        source=Source.CHAT_EXPORT, platform="chatgpt", conversation_id=conv_id,
        updated_at=datetime.fromtimestamp(updated, tz=timezone.utc), messages=msgs,
    )


def test_two_states_of_one_chat_in_a_row_keep_their_own_messages(tmp_path):
    # the same chat exported twice, files side by side in a folder: two rows with one key, adjacent
    c, m = tmp_path / "c.parquet", tmp_path / "m.parquet"
    with normalize_mod.TableWriter(c, m) as writer:
        writer.add(_conv("same", 2, 1.0))
        writer.add(_conv("same", 3, 2.0))
        writer.add(_conv("other", 1, 1.0))
    back = [conv for conv, _ in normalize_mod.iter_conversations(c, m)]
    assert [(x.conversation_id, len(x.messages)) for x in back] == [("same", 2), ("same", 3), ("other", 1)]
    assert {msg.message_id.split(":")[1] for msg in back[1].messages} == {"2.0"}


def test_folder_with_the_same_chat_exported_twice_reads_back_whole(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for day, turns in (("2026-01-01", 2), ("2026-01-02", 4)):
        chat = {
            "schema": "chat-export/1", "platform": "chatgpt", "url": "https://chatgpt.com/c/abc-123-def",
            "title": "t", "exported_at": f"{day}T00:00:00Z",
            "messages": [{"role": "user" if i % 2 == 0 else "assistant", "text": f"turn {i}"} for i in range(turns)],
        }
        (folder / f"chatgpt-t-{day}.json").write_text(json.dumps(chat))
    report = ReadReport()
    c, m = tmp_path / "c.parquet", tmp_path / "m.parquet"
    with normalize_mod.TableWriter(c, m) as writer:
        for conv in read_path(folder, report):
            writer.add(conv)
    assert not report.errors
    back = [conv for conv, _ in normalize_mod.iter_conversations(c, m)]
    assert [len(x.messages) for x in back] == [2, 4]
    assert [x.message_count for x in back] == [2, 4]


def test_local_store_lists_no_symlink_out_of_it(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    store = LocalObjectStore(tmp_path / "bucket")
    store.put_bytes("raw/a.json", b"{}")
    os.symlink(secret, store.root / "raw" / "link.json")
    os.symlink(tmp_path / "missing", store.root / "raw" / "dangling.json")
    os.symlink(store.root / "raw" / "a.json", store.root / "raw" / "inside.json")
    assert [o.key for o in store.list("raw/")] == ["raw/a.json", "raw/inside.json"]


def test_damaged_member_of_an_upload_streamed_from_s3(s3_store):
    s3_store.put_bytes("raw/up.zip", _damaged_zip())
    good = b"".join(_claude_code_line(i) for i in range(3))
    s3_store.put_bytes("raw/session.jsonl", good)
    report = ReadReport()
    convs = []
    for key in ("raw/up.zip", "raw/session.jsonl"):
        entry = Entry(name=s3_store.uri(key), opener=lambda key=key: s3_store.open(key))
        convs += list(read_entry(entry, report))
    assert [c.conversation_id for c in convs] == ["c-good", "s1"]
    assert len(convs[1].messages) == 3
    assert [e.file for e in report.errors] == [f"{s3_store.uri('raw/up.zip')}!conversations-000.json"]


@pytest.mark.parametrize("name", ["conversations.jsonl", "data.txt"])
def test_jsonl_from_s3_streams_line_by_line(s3_store, monkeypatch, name):
    monkeypatch.setattr(jsonstream, "MAX_LINE_BYTES", 4096)
    body = _claude_code_line(0) + b'{"x": "' + b"q" * 20_000 + b'"}\n' + _claude_code_line(1)
    s3_store.put_bytes(f"raw/{name}", body)
    report = ReadReport()
    entry = Entry(name=s3_store.uri(f"raw/{name}"), opener=lambda: s3_store.open(f"raw/{name}"))
    [conv] = list(read_entry(entry, report))
    assert len(conv.messages) == 2
    assert [e.where for e in report.errors] == ["line 2"]


def test_markdown_note_showing_a_md_code_block_is_not_a_chat_export():
    from chatetl.readers.detect import Format, detect

    note = "# How to write a README\n\nExample:\n\n```md\n# Title\nSome text\n```\n\nMore prose.\n"
    assert detect(Entry.from_bytes("readme.md", note.encode())) == (None, None)
    report = ReadReport()
    zipped = _zip({"textdocs/readme.md": note.encode(), "conversations.json": json.dumps([_chatgpt("c1")]).encode()})
    assert [c.conversation_id for c in read_entry(Entry.from_bytes("up.zip", zipped), report)] == ["c1"]
    assert not report.errors and report.skipped["not a chat file"] == 1
    # the real thing, also after a front matter and with Windows line ends
    chat = "---\nnote: x\n---\n\n```md\nsys\nplatform: grok\n```\n\n```md\ngrok:\n```\n\nHi.\n"
    assert detect(Entry.from_bytes("c.md", chat.encode()))[0] is Format.CHAT_EXPORT_MD
    assert detect(Entry.from_bytes("c.md", chat.replace("\n", "\r\n").encode()))[0] is Format.CHAT_EXPORT_MD
    assert detect(Entry.from_bytes("c.md", b"```md\nuser:\n```\n\nhello\n"))[0] is Format.CHAT_EXPORT_MD
