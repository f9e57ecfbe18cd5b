"""Zip uploads (chatetl.readers.inputs.archive): a damaged member is reported by name and the other
members still read, also when the upload streams from the real S3 server; a member, or a
nested zip, over the size cap is refused without being unpacked or copied; a member with an
unsafe name is read under a sanitized one, which is all that errors, tables, quarantine keys and
exported files ever see; a zip or folder holding nothing readable, or a member that only resembles
a chat file, is refused by name."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from reader_inputs import chatgpt_record, claude_code_line, damaged_zip, zip_bytes

from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.inputs import archive


def test_damaged_zip_member_is_reported_and_the_rest_is_read():
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes("up.zip", damaged_zip()), report))
    assert [c.conversation_id for c in convs] == ["c-good"]
    assert len(report.errors) == 1
    err = report.errors[0]
    assert err.file == "up.zip!conversations-000.json"
    assert "damaged zip member" in err.reason and "CRC" in err.reason


def test_zip_member_over_the_size_cap_is_refused_unread(monkeypatch):
    monkeypatch.setattr(archive, "MAX_MEMBER_BYTES", 10_000)
    bomb = b"[" + b" " * 200_000 + b"]"
    data = zip_bytes({"a-bomb.json": bomb, "conversations.json": json.dumps([chatgpt_record("c1")]).encode()}, zipfile.ZIP_DEFLATED)
    assert len(data) < 10_000  # small on the wire, big unpacked
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes("up.zip", data), report))
    assert [c.conversation_id for c in convs] == ["c1"]
    assert [e.file for e in report.errors] == ["up.zip!a-bomb.json"]
    assert "200002 bytes" in report.errors[0].reason and "not read" in report.errors[0].reason


def test_nested_zip_over_the_size_cap_is_not_copied(monkeypatch, tmp_path):
    monkeypatch.setattr(archive, "MAX_MEMBER_BYTES", 50_000)
    inner = zip_bytes({"filler.bin": b"\0" * 100_000}, zipfile.ZIP_STORED)
    outer = zip_bytes({"inner.zip": inner}, zipfile.ZIP_DEFLATED)
    report = ReadReport()
    assert list(read_entry(Entry.from_bytes("up.zip", outer), report)) == []
    assert [e.file for e in report.errors] == ["up.zip!inner.zip"]


@pytest.mark.integration
def test_damaged_member_of_an_upload_streamed_from_s3(s3_store):
    s3_store.put_bytes("raw/up.zip", damaged_zip())
    good = b"".join(claude_code_line(i) for i in range(3))
    s3_store.put_bytes("raw/session.jsonl", good)
    report = ReadReport()
    convs = []
    for key in ("raw/up.zip", "raw/session.jsonl"):
        entry = Entry(name=s3_store.uri(key), opener=lambda key=key: s3_store.open(key))
        convs += list(read_entry(entry, report))
    assert [c.conversation_id for c in convs] == ["c-good", "s1"]
    assert len(convs[1].messages) == 3
    assert [e.file for e in report.errors] == [f"{s3_store.uri('raw/up.zip')}!conversations-000.json"]


# --- unsafe member names: read from the zip under a sanitized name, never used as a path -----------

UNSAFE_NAMES = {
    "../x.json": "x.json",
    "../../deep/x.json": "deep/x.json",
    "/abs/x.json": "abs/x.json",
    "C:\\x.json": "x.json",
    "C:\\Users\\a\\x.json": "Users/a/x.json",
    "..\\x.json": "x.json",
    "ok/./x.json": "ok/x.json",
    "a\x01b.json": "a_b.json",
    "..": "unnamed",
}


def test_safe_member_names():
    for raw, safe in UNSAFE_NAMES.items():
        assert archive.safe_member_name(raw) == safe, raw
    assert archive.safe_member_name("conversations-000.json") == "conversations-000.json"


def _unsafe_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i, name in enumerate(["../x.json", "/abs/x.json", "C:\\x.json", "..\\x.json"]):
            zf.writestr(zipfile.ZipInfo(name), json.dumps([chatgpt_record(f"c{i}")]))
        # a bad record in an unsafely named member: its part goes to quarantine
        zf.writestr(zipfile.ZipInfo("../../bad.json"), json.dumps([chatgpt_record("c-ok"), {"mapping": {"m": {}}, "id": 7}]))
    return buf.getvalue()


def test_unsafe_member_names_are_read_under_sanitized_names(tmp_path):
    upload = tmp_path / "in" / "upload.zip"
    upload.parent.mkdir()
    upload.write_bytes(_unsafe_zip())
    report = ReadReport()
    convs = list(read_entry(Entry.from_path(upload), report))
    assert sorted(c.conversation_id for c in convs) == ["c-ok", "c0", "c1", "c2", "c3"]
    members = sorted(c.source_file.split("!", 1)[1] for c in convs)
    assert members == ["abs/x.json", "bad.json", "x.json", "x.json", "x.json"]
    assert all(".." not in c.source_file and "\\" not in c.source_file for c in convs)
    [err] = report.errors  # only the bad record, under the sanitized name
    assert err.file == f"{upload}!bad.json" and err.where == "record 1"
    assert report.skipped["zip member with an unsafe name (read under a safe one)"] == 5
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["in", "in/upload.zip"]  # nothing written


def test_unsafe_member_names_reach_no_key_or_file_name_downstream(tmp_path):
    from chatetl.exports.files import conversation_files
    from chatetl.exports.formats import PER_CONVERSATION
    from chatetl.ingest.upload import normalize_upload
    from chatetl.storage import LocalObjectStore
    from chatetl.tables import read_rows

    store = LocalObjectStore(tmp_path / "bucket")
    info = store.put_bytes("raw/u/upload.zip", _unsafe_zip())
    result = normalize_upload(store, info, "2026-03-01", workdir=tmp_path)
    assert result.conversations == 5
    keys = sorted(o.key for o in store.list(""))
    assert all(".." not in k and "\\" not in k and "abs/" not in k for k in keys)
    # the bad record's bytes and errors.json: named by index, never by member
    assert sorted(k for k in keys if k.startswith("quarantine/")) == sorted(result.quarantined)
    assert sorted(k.rsplit("/", 1)[1] for k in result.quarantined) == ["errors.json", "part-00000.bin"]
    errors = json.loads(store.get_bytes(next(k for k in keys if k.endswith("errors.json"))))
    assert [e["file"].rsplit("!", 1)[1] for e in errors["errors"]] == ["bad.json"]
    with store.open(next(k for k in keys if k.startswith("normalized/conversations/"))) as f:
        files = sorted(r["source_file"].rsplit("!", 1)[1] for r in read_rows(f, ["source_file"]))
    assert files == ["abs/x.json", "bad.json", "x.json", "x.json", "x.json"]
    # the exported files are named after platform, title, date and id: never after a member
    report = ReadReport()
    for conv in read_entry(Entry.from_bytes("upload.zip", _unsafe_zip()), report):
        for f in conversation_files(conv, list(PER_CONVERSATION)):
            assert f.path.startswith(f"{f.format}/") and ".." not in f.path and "x.json" not in f.path


# --- nothing passes in silence ----------------------------------------------------------------------

def test_a_zip_holding_no_chat_file_is_refused():
    report = ReadReport()
    data = zip_bytes({"notes/readme.md": b"# notes\n", "img.png": b"\x89PNG\r\n"})
    assert list(read_entry(Entry.from_bytes("up.zip", data), report)) == []
    [err] = report.errors
    assert err.file == "up.zip" and "unrecognized format" in err.reason and "none of its 2 files" in err.reason
    report = ReadReport()
    assert list(read_entry(Entry.from_bytes("empty.zip", zip_bytes({})), report)) == []
    assert [(e.file, "unrecognized format" in e.reason) for e in report.errors] == [("empty.zip", True)]


def test_a_zip_member_that_only_resembles_a_chat_file_is_refused_by_name():
    near = json.dumps([{"title": "t", "current_node": "n", "id": "c9"}]).encode()  # ChatGPT keys, no mapping
    data = zip_bytes({"conversations.json": near, "readme.md": b"# hello\n", "ok.json": json.dumps([chatgpt_record("c1")]).encode()})
    report = ReadReport()
    assert [c.conversation_id for c in read_entry(Entry.from_bytes("up.zip", data), report)] == ["c1"]
    [err] = report.errors
    assert err.file == "up.zip!conversations.json"
    assert "unrecognized format" in err.reason and "chatgpt" in err.reason
    assert report.skipped["not a chat file"] == 1  # the README: not chat data, skipped and counted


def test_a_folder_holding_no_chat_file_is_refused(tmp_path):
    from chatetl.readers import read_path

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "readme.md").write_text("# notes\n")
    report = ReadReport()
    assert list(read_path(tmp_path / "docs", report)) == []
    [err] = report.errors
    assert err.file == str(tmp_path / "docs") and "unrecognized format" in err.reason and "none of its 1 files" in err.reason
    (tmp_path / "docs" / "conversations.json").write_text(json.dumps([chatgpt_record("c1")]))
    report = ReadReport()
    assert [c.conversation_id for c in read_path(tmp_path / "docs", report)] == ["c1"] and report.errors == []
