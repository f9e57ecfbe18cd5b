"""JSONL records (chatetl.readers.jsonscan.records): a line longer than the cap is skipped and named by
its line number while a line of exactly the cap reads; a JSONL object on the real S3 server,
whatever its name, streams line by line, so one overlong line costs only itself."""

from __future__ import annotations

import pytest
from reader_inputs import claude_code_line

from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.jsonscan import records as jsonstream


def test_jsonl_line_longer_than_the_cap_is_skipped_with_its_line_number(monkeypatch):
    monkeypatch.setattr(jsonstream, "MAX_LINE_BYTES", 4096)
    long_line = b'{"type": "user", "junk": "' + b"z" * 50_000 + b'"}\n'
    data = claude_code_line(0) + claude_code_line(1) + long_line + claude_code_line(2)
    report = ReadReport()
    records = list(jsonstream.iter_records(Entry.from_bytes("s1.jsonl", data), jsonstream.Shape.JSONL, report))
    assert [where for where, _ in records] == ["line 1", "line 2", "line 4"]
    assert [str(e) for e in report.errors] == ["s1.jsonl (line 3): line longer than 4096 bytes: skipped"]
    # a line of exactly the cap still reads
    exact = b'{"k": "' + b"a" * (4096 - 10) + b'"}\n'
    assert len(exact) == 4096
    report = ReadReport()
    assert len(list(jsonstream.iter_records(Entry.from_bytes("x.jsonl", exact), jsonstream.Shape.JSONL, report))) == 1
    assert not report.errors


@pytest.mark.integration
@pytest.mark.parametrize("name", ["conversations.jsonl", "data.txt"])
def test_jsonl_from_s3_streams_line_by_line(s3_store, monkeypatch, name):
    monkeypatch.setattr(jsonstream, "MAX_LINE_BYTES", 4096)
    body = claude_code_line(0) + b'{"x": "' + b"q" * 20_000 + b'"}\n' + claude_code_line(1)
    s3_store.put_bytes(f"raw/{name}", body)
    report = ReadReport()
    entry = Entry(name=s3_store.uri(f"raw/{name}"), opener=lambda: s3_store.open(f"raw/{name}"))
    [conv] = list(read_entry(entry, report))
    assert len(conv.messages) == 2
    assert [e.where for e in report.errors] == ["line 2"]
