"""Long JSON strings (issue 14, item 4): reading is linear in the input, and a string past the value
cap (CHATETL_MAX_VALUE_BYTES) costs only its record.

Before: the splitter read a long record in fixed 2 MB chunks and copied its whole buffer on each
one (a 256 MB string: 0.22 s per MB, twice the rate at 128 MB: quadratic), its exact scanner
matched a string not yet closed again after every read (a 32 MB string in a list record: 0.52 s
per MB), and single objects, a Grok export's other sections and JSON Lines read as one went
through ijson (a 16 MB string: 0.30 s per MB and doubling with the length; 300 MB took 432 s).
The work is asserted here, never the time: how many bytes the splitter copies per byte of input,
and the memory a string far past the cap takes (the old paths held it whole, more than once).
Seconds per MB, old and new side by side: bench/long_values.py.
"""

from __future__ import annotations

import io
import json
import tracemalloc

import pyarrow.parquet as pq
import pytest
from reader_inputs import chatgpt_record, zip_bytes

from chatetl.ingest.upload import normalize_upload
from chatetl.layout import quarantine_prefix, upload_id
from chatetl.normalize import Tuning, normalize_into
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.jsonscan import records as jsonstream
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.jsonscan.splitter import ArraySplitter, BadRecord
from chatetl.readers.jsonscan.strings import first_long_string, string_end
from chatetl.readers.jsonscan.values import ValueSplitter
from chatetl.readers.platforms.grok import iter_conversation_records
from chatetl.settings import Settings
from chatetl.storage import LocalObjectStore
from chatetl.tables import TableWriter

MB = 1024 * 1024


class Generated(io.RawIOBase):
    """Bytes made as they are read, (piece, times) after (piece, times): a file of any length that
    holds no memory, so what a reader takes is all tracemalloc sees."""

    def __init__(self, parts: list[tuple[bytes, int]]) -> None:
        super().__init__()
        self.parts = [(piece, times) for piece, times in parts if times]
        self.left = len(self.parts[0][0]) * self.parts[0][1] if self.parts else 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self.parts and self.left == 0:
            self.parts.pop(0)
            self.left = len(self.parts[0][0]) * self.parts[0][1] if self.parts else 0
        if not self.parts:
            return 0
        piece, times = self.parts[0]
        offset = (len(piece) * times - self.left) % len(piece)
        n = min(len(buffer), self.left, len(piece) - offset)
        buffer[:n] = piece[offset:offset + n]
        self.left -= n
        return n


def generated(parts: list[tuple[bytes, int]]) -> Entry:
    return Entry(name="long.json", opener=lambda: io.BufferedReader(Generated(parts), 1 << 16))


def x_string(n_mb: int) -> tuple[bytes, int]:
    return (b"x" * MB, n_mb)


@pytest.fixture
def cap_1_mib(monkeypatch):
    monkeypatch.setenv("CHATETL_MAX_VALUE_BYTES", str(MB))


# ---- linear work ----


class CountingSplitter(ArraySplitter):
    """Counts the bytes the splitter's buffer copies (what it already held, on each read of more)."""

    copied = 0

    def _more(self) -> bool:
        held = len(self.buf) - self.start
        more = super()._more()
        if more:
            CountingSplitter.copied += held
        return more


RECORDS = {
    # an object record proven by decoding at its candidate end
    "object": lambda s: b'{"id": "a", "title": "t", "text": "' + s + b'"}',
    # a list record: the exact scanner follows it token by token
    "list": lambda s: b'["a", "' + s + b'"]',
    # a record that is a string
    "string": lambda s: b'"' + s + b'"',
}


@pytest.mark.parametrize("prove", [True, False], ids=["proven", "cut"])
@pytest.mark.parametrize("shape", RECORDS)
def test_a_long_record_is_copied_a_bounded_number_of_times_per_byte(shape, prove):
    """Fixed 2 MB reads copied a 24 MB record 6.5 times per byte (2 + 4 + ... + 24 MB); reads as
    big as what is held copy it under twice, at any length."""
    size = 24 * MB
    data = b'[{"id": "0", "title": "first"}, ' + RECORDS[shape](b"x" * size) + b', {"id": "b", "title": "after"}]'
    CountingSplitter.copied = 0
    items = list(CountingSplitter(io.BytesIO(data), prove=prove, max_value=64 * MB))
    assert len(items) == 3 and not any(isinstance(i, BadRecord) for i in items)
    assert len(bytes(items[1][0])) == len(RECORDS[shape](b"x" * size))
    assert CountingSplitter.copied < 2 * len(data)


def test_string_end_scans_a_string_read_in_pieces_once():
    text = b'ab\\"c\\\\' * 1000 + b"tail"
    data = b'"' + text + b'" rest'
    # every cut of the string, however it falls (inside an escape too), goes on from a safe place
    for cut in range(1, len(data) - 5, 97):
        pos, closed = string_end(data[:cut], 1)
        assert not closed and pos <= cut
        end, closed = string_end(data, pos)
        assert closed and end == len(data) - 6
    # escaped quotes dense enough to hand over to the possessive pattern
    dense = b'"' + b'\\"' * 5000 + b'"'
    assert string_end(dense, 1) == (len(dense) - 1, True)
    assert first_long_string(b'{"a": "' + b"y" * 40 + b'", "b": "short"}', 39) == 6
    assert first_long_string(b'{"a": "' + b"y" * 40 + b'", "b": "short"}', 40) is None


# ---- a string past the cap: its record quarantined, the rest read ----


def test_a_chatgpt_conversation_with_a_string_past_the_cap_is_quarantined_and_the_rest_read(cap_1_mib):
    records = [chatgpt_record("c1"), chatgpt_record("c2", text="y" * (3 * MB)), chatgpt_record("c3")]
    report = ReadReport()
    convs = list(read_entry(Entry.from_bytes("conversations.json", json.dumps(records).encode()), report))
    assert [c.conversation_id for c in convs] == ["c1", "c3"]
    [err] = report.errors
    assert (err.file, err.where) == ("conversations.json", "record 1")
    assert "a string longer than 1048576 bytes (1 MiB)" in err.reason and "CHATETL_MAX_VALUE_BYTES" in err.reason
    assert err.raw is None  # (past the cap: listed in quarantine, its bytes not kept)


def test_a_string_just_under_the_cap_is_read(cap_1_mib):
    records = [chatgpt_record("c1", text="y" * (MB - 1))]
    report = ReadReport()
    [conv] = read_entry(Entry.from_bytes("conversations.json", json.dumps(records).encode()), report)
    assert not report.errors and len(conv.messages[0].text) == MB - 1


def test_a_single_object_with_a_string_past_the_cap_is_refused_and_the_values_after_it_read(cap_1_mib):
    parts = [(b'{"id": "a", "text": "', 1), x_string(5), (b'"}\n{"id": "b"}\n{"id": "c", "n": NaN}\n[1, 2', 1)]
    report = ReadReport()
    records = list(jsonstream.iter_records(generated(parts), Shape.OBJECT, report))
    assert [(where, r["id"]) for where, r in records] == [("record 1", "b"), ("record 2", "c")]
    assert records[1][1]["n"] is None  # (a NaN read as null, counted, as in arrays)
    assert [(e.where, e.reason.split(",")[0]) for e in report.errors] == [
        ("", "a string longer than 1048576 bytes (1 MiB)"),
        ("record 2 (conversation c)", "values no JSON reader holds read as null: NaN (1)"),
        ("after record 2", "invalid or truncated JSON: file ends inside a record"),
    ]


def test_a_json_lines_line_with_a_string_past_the_cap_is_refused_and_the_next_lines_read(cap_1_mib):
    data = b'{"id": "a"}\n{"id": "b", "text": "' + b"z" * (2 * MB) + b'"}\n{"id": "c"}\n'
    report = ReadReport()
    records = list(jsonstream.iter_records(Entry.from_bytes("s.jsonl", data), Shape.JSONL, report))
    assert [where for where, _ in records] == ["line 1", "line 3"]
    [err] = report.errors
    assert err.where == "line 2" and "of the line: the line is not read" in err.reason


def test_a_grok_export_reads_past_a_long_section_before_its_conversations(cap_1_mib):
    conv = {"conversation": {"id": "g1", "title": "T"}, "responses": [
        {"response": {"_id": "r1", "sender": "human", "message": "hi", "create_time": "2026-01-01T00:00:00Z"}}]}
    parts = [(b'{"projects": [{"name": "', 1), x_string(6), (b'"}], "tasks": 3, "conversations": [', 1),
             (json.dumps(conv).encode() + b', {"conversation": {"id": "g2"}, "responses": [{"response": {"message": "', 1),
             x_string(2), (b'"}}]}, ' + json.dumps(conv).encode() + b"]}", 1)]
    report = ReadReport()
    items = list(iter_conversation_records(generated(parts), Shape.OBJECT, report))
    assert [where for where, _ in items] == ["conversations[0]", "conversations[2]"]
    [err] = report.errors
    assert err.where == "conversations[1]" and "CHATETL_MAX_VALUE_BYTES" in err.reason


@pytest.mark.parametrize("shape", [Shape.ARRAY, Shape.OBJECT])
def test_memory_stays_near_the_cap_however_long_the_string(cap_1_mib, shape):
    """A 48 MB string past a 1 MiB cap: what the reader holds stays near a read's worth (the old
    paths held the whole string, ijson several copies of it)."""
    opening = b'[{"id": "a", "text": "' if shape is Shape.ARRAY else b'{"id": "a", "text": "'
    closing = b'"}, {"id": "b"}]' if shape is Shape.ARRAY else b'"}\n{"id": "b"}'
    report = ReadReport()
    tracemalloc.start()
    try:
        records = list(jsonstream.iter_records(generated([(opening, 1), x_string(48), (closing, 1)]), shape, report))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [r["id"] for _, r in records] == ["b"] and len(report.errors) == 1
    assert peak < 16 * MB


def test_at_the_default_cap_a_50_mb_string_is_read_and_a_100_mb_one_refused(tmp_path):
    assert Settings.from_env({}).max_value_bytes == 64 * MB
    path = tmp_path / "conversations.json"
    with open(path, "wb") as f:
        f.write(b"[")
        for i, size in enumerate((50 * MB, 100 * MB, 10)):
            record = json.dumps(chatgpt_record(f"c{i}", text="@")).encode()
            head, tail = record.split(b'"@"')
            f.write(b", " * (i > 0) + head + b'"')
            f.writelines(b"w" * MB for _ in range(size // MB))
            f.write(b"w" * (size % MB) + b'"' + tail)
        f.write(b"]")
    report = ReadReport()
    lengths = {c.conversation_id: len(c.messages[0].text) for c in read_entry(Entry.from_path(path), report)}
    assert lengths == {"c0": 50 * MB, "c2": 10}
    [err] = report.errors
    assert err.where == "record 1" and "67108864 bytes (64 MiB)" in err.reason


def test_the_value_cap_is_a_setting():
    assert Settings.from_env({"CHATETL_MAX_VALUE_BYTES": "1000"}).max_value_bytes == 1000
    assert ValueSplitter(io.BytesIO(b"{}"), max_value=5).max_value == 5


def test_the_quarantine_of_an_upload_lists_the_record_past_the_cap(tmp_path, cap_1_mib):
    store = LocalObjectStore(tmp_path / "bucket")
    day = "2026-03-01"
    key = f"raw/{day}/conversations.json"
    records = [chatgpt_record("c1"), chatgpt_record("c2", text="q" * (2 * MB)), chatgpt_record("c3")]
    info = store.put_bytes(key, json.dumps(records).encode())
    result = normalize_upload(store, info, day, workdir=tmp_path)
    assert result.conversations == 2
    listing = json.loads(store.get_bytes(f"{quarantine_prefix(day, upload_id(key))}errors.json"))
    [error] = listing["errors"]
    assert error["where"] == "record 1" and "CHATETL_MAX_VALUE_BYTES" in error["reason"]


def test_on_two_cores_a_string_past_the_cap_costs_its_record_alone(tmp_path, cap_1_mib, monkeypatch):
    """The two-core path cuts records without decoding them: a record past the cap goes to the exact
    scanner there too, and the tables and errors are the one process's."""
    records = [chatgpt_record(f"c{i}", text=f"message {i}") for i in range(40)]
    records[7] = chatgpt_record("c7", text="y" * (3 * MB))
    records[20] = chatgpt_record("c20", text="z" * (MB // 2))  # long, under the cap: read on both
    path = tmp_path / "conversations.json"
    path.write_bytes(json.dumps(records).encode())
    results = []
    for workers in (1, 2):
        report = ReadReport()
        with TableWriter(tmp_path / f"c{workers}.parquet", tmp_path / f"m{workers}.parquet") as writer:
            normalize_into(writer, [path], report, workers, tuning=Tuning(records_bytes=4000, wait_for_workers=True))
        ids = pq.read_table(tmp_path / f"c{workers}.parquet").column("conversation_id").to_pylist()
        results.append((ids, [(e.where, e.reason) for e in report.errors]))
    assert results[0] == results[1]
    ids, errors = results[1]
    assert ids == [f"c{i}" for i in range(40) if i != 7]
    assert [where for where, _ in errors] == ["record 7"]


def test_a_claude_code_line_with_a_string_past_the_cap_is_refused_and_the_session_read(cap_1_mib):
    """Before: the session log's own line loop read every line with json.loads, past the cap too."""
    def line(i: int, text: str) -> bytes:
        return json.dumps({"type": "user", "uuid": f"u{i}", "parentUuid": f"u{i - 1}" if i else None, "sessionId": "s1",
                           "timestamp": f"2026-01-01T00:00:0{i}Z", "message": {"role": "user", "content": text}}).encode() + b"\n"

    data = line(0, "first") + line(1, "y" * (2 * MB)) + line(2, "third")
    report = ReadReport()
    [conv] = read_entry(Entry.from_bytes("-home-me-app/s1.jsonl", data), report)
    assert [m.text for m in conv.messages] == ["first", "third"]
    [err] = report.errors
    assert (err.file, err.where) == ("-home-me-app/s1.jsonl", "line 2") and err.raw is None
    assert "a string longer than 1048576 bytes (1 MiB)" in err.reason and "of the line: the line is not read" in err.reason


def test_an_ai_studio_prompt_with_a_string_past_the_cap_is_refused_and_the_other_files_read(cap_1_mib, tmp_path):
    """Before: a prompt file up to 256 MB was read whole by orjson, whatever the cap. Now it is refused
    in its place (quarantined, its bytes not kept), and the other prompts of the upload read."""
    def prompt(text: str) -> bytes:
        chunks = [{"role": "user", "text": text, "createTime": "2026-01-07T10:00:00Z"}, {"role": "model", "text": "ok"}]
        return json.dumps({"runSettings": {"model": "models/gemini-2.5-flash"}, "systemInstruction": {},
                           "chunkedPrompt": {"chunks": chunks, "pendingInputs": []}}).encode()

    store = LocalObjectStore(tmp_path / "bucket")
    day, folder = "2026-03-01", "Takeout/Drive/Google AI Studio"
    key = f"raw/{day}/drive.zip"
    files = {f"{folder}/Short one": prompt("hello"), f"{folder}/Long one": prompt("y" * (2 * MB)), f"{folder}/Last": prompt("bye")}
    info = store.put_bytes(key, zip_bytes(files))
    result = normalize_upload(store, info, day, workdir=tmp_path)
    assert result.conversations == 2
    listing = json.loads(store.get_bytes(f"{quarantine_prefix(day, upload_id(key))}errors.json"))
    [error] = listing["errors"]
    assert error["file"].endswith(f"{folder}/Long one") and "CHATETL_MAX_VALUE_BYTES" in error["reason"]
    assert "at byte" in error["reason"]
