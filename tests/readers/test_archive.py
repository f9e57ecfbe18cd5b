"""Zip uploads (chatetl.readers.archive): a damaged member is reported by name and the other
members still read, also when the upload streams from the real S3 server; a member, or a
nested zip, over the size cap is refused without being unpacked or copied."""

from __future__ import annotations

import json
import zipfile

import pytest
from reader_inputs import chatgpt_record, claude_code_line, damaged_zip, zip_bytes

from chatetl.readers import Entry, ReadReport, archive, read_entry


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
