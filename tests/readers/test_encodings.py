"""UTF-16 and UTF-32 chat files, with or without a byte order mark, read as their UTF-8 twins do
(issue 14, item 8: UTF-16 JSON was refused as "a shape no reader knows")."""

from __future__ import annotations

import codecs
import io
import json

import pytest
from export_inputs import chat, visible
from reader_inputs import chatgpt_record, zip_bytes

from chatetl.exports.files import conversation_files
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.inputs.encodings import Utf8Stream, wide_encoding

ENCODINGS = [
    ("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-le", b""), ("utf-16-be", codecs.BOM_UTF16_BE), ("utf-16-be", b""),
    ("utf-32-le", codecs.BOM_UTF32_LE), ("utf-32-le", b""), ("utf-32-be", codecs.BOM_UTF32_BE), ("utf-32-be", b""),
]


def read(name: str, data: bytes):
    report = ReadReport()
    return list(read_entry(Entry.from_bytes(name, data), report)), report


def summary(convs):
    return [(c.key, c.title, [(m.role.value, m.text) for m in c.visible_turns]) for c in convs]


@pytest.mark.parametrize("encoding, bom", ENCODINGS)
def test_a_chatgpt_export_in_utf16_or_utf32_reads_as_its_utf8_twin(encoding, bom):
    records = [chatgpt_record(f"c{i}", text=f"héllo 🌍 {i} «naïve»") for i in range(3)]
    text = json.dumps(records, ensure_ascii=False, indent=1)
    want, want_report = read("conversations.json", text.encode())
    got, report = read("conversations.json", bom + text.encode(encoding))
    assert want and report.errors == [] and want_report.errors == []
    assert summary(got) == summary(want)


@pytest.mark.parametrize("fmt", ["chat-export-json", "chat-export-md", "yaml"])
def test_chatetl_exports_saved_as_utf16_by_a_windows_tool_read_back(fmt):
    conv = chat([("user", "Quelle heure est-il ? 🌍"), ("assistant", "Il est « midi »")])
    (f,) = conversation_files(conv, [fmt])
    name = f.path.rsplit("/", 1)[-1]
    got, report = read(name, codecs.BOM_UTF16_LE + f.data.decode("utf-8").encode("utf-16-le"))
    assert report.errors == []
    assert [visible(c) for c in got] == [visible(conv)]


def test_inside_a_zip_too():
    text = json.dumps([chatgpt_record("z1", text="zipped")])
    got, report = read("export.zip", zip_bytes({"conversations.json": codecs.BOM_UTF16_LE + text.encode("utf-16-le")}))
    assert report.errors == [] and [c.conversation_id for c in got] == ["z1"]


def test_the_head_tells_the_encoding_and_leaves_utf8_and_zips_alone():
    assert wide_encoding(b"[{\"a\"") is None
    assert wide_encoding(codecs.BOM_UTF8 + b"[{") is None
    assert wide_encoding(b"PK\x03\x04\x14\x00\x00\x00") is None
    assert wide_encoding("[{".encode("utf-16-le")) == "utf-16-le"
    assert wide_encoding("[{".encode("utf-16-be")) == "utf-16-be"
    assert wide_encoding("[".encode("utf-32-le")) == "utf-32-le"
    assert wide_encoding("[".encode("utf-32-be")) == "utf-32-be"
    assert wide_encoding(codecs.BOM_UTF32_LE + b"[\x00\x00\x00") == "utf-32"  # not taken for UTF-16-LE


def test_the_stream_decodes_across_blocks_and_replaces_bad_sequences(monkeypatch):
    monkeypatch.setattr("chatetl.readers.inputs.encodings.BLOCK", 7)  # odd: characters and surrogate pairs split across reads
    text = "ab🌍cd" * 50
    assert Utf8Stream(io.BytesIO(text.encode("utf-16-le")), "utf-16-le").read() == text.encode()
    lone = "x".encode("utf-16-le") + b"\x00\xdc" + "y".encode("utf-16-le")  # a lone low surrogate
    assert Utf8Stream(io.BytesIO(lone), "utf-16-le").read().decode() == "x\ufffdy"


def test_binary_data_that_only_looks_wide_is_still_refused():
    got, report = read("blob.json", b"\x01\x00\x02\x00" * 100)
    assert got == [] and [e.file for e in report.errors] == ["blob.json"]
    assert "unrecognized format" in report.errors[0].reason


def test_bad_sequences_are_counted_once_as_drift_and_the_file_still_reads():
    """A lone surrogate in a UTF-16 file reads as U+FFFD, as before, and is now counted (the head is read twice:
    detection and the reader; a small file is read whole both times, still counted once)."""
    raw = json.dumps([chatgpt_record("c1", text="Hello MARK"), chatgpt_record("c2", text="Hi MARK")]).encode("utf-16-le")
    mark = "MARK".encode("utf-16-le")
    bad = raw.replace(mark, "x".encode("utf-16-le") + b"\x00\xdc" + "y".encode("utf-16-le"))  # two lone low surrogates
    got, report = read("conversations.json", bad)
    assert report.errors == []
    assert [m.text for c in got for m in c.visible_turns] == ["Hello x\ufffdy", "Hi x\ufffdy"]
    assert report.drift == {"encoding.invalid_sequence": 2}
    clean, clean_report = read("conversations.json", raw)
    assert clean_report.drift == {} and [m.text for c in clean for m in c.visible_turns] == ["Hello MARK", "Hi MARK"]


def test_the_stream_counts_what_it_replaced(monkeypatch):
    monkeypatch.setattr("chatetl.readers.inputs.encodings.BLOCK", 3)  # a bad sequence split across reads is one
    lone = ("x".encode("utf-16-le") + b"\x00\xdc") * 5 + b"y"  # five lone surrogates, then a cut last character
    stream = Utf8Stream(io.BytesIO(lone), "utf-16-le")
    assert stream.read().decode() == "x\ufffd" * 5 + "\ufffd"
    assert stream.invalid == 6
