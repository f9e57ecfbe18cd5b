"""Bad input of every kind: a clear error naming the file and the place, the good parts still read."""

from __future__ import annotations

import io
import json
import resource
import zipfile

from chatetl.readers import Entry, ReadReport, read_entry, read_path
from chatetl.readers.jsonscan.depthguard import (
    MAX_JSON_DEPTH,
    DepthGuard,
    NestingTooDeep,
)
from chatetl.samples import chatgpt_conversations


def _read(name: str, data: bytes):
    report = ReadReport()
    return list(read_entry(Entry.from_bytes(name, data), report)), report


def test_empty_file():
    convs, report = _read("empty.json", b"")
    assert convs == [] and [str(e) for e in report.errors] == ["empty.json: empty file"]


def test_binary_garbage():
    convs, report = _read("garbage.json", bytes(range(256)) * 64)
    assert convs == []
    (err,) = report.errors
    assert err.file == "garbage.json" and "unrecognized format" in err.reason


def test_valid_json_of_the_wrong_shape():
    convs, report = _read("numbers.json", json.dumps([1, 2, 3]).encode())
    assert convs == [] and "unrecognized format" in report.errors[0].reason
    convs, report = _read("object.json", json.dumps({"hello": "world"}).encode())
    assert convs == [] and report.errors[0].file == "object.json"


def test_absurd_nesting_is_refused_without_memory_growth():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    deep = b"[" * 3_000_000 + b"]" * 3_000_000
    convs, report = _read("deep.json", deep)
    assert convs == []
    assert f"more than {MAX_JSON_DEPTH} levels" in report.errors[0].reason
    # a deep record after good ones: the good ones come out, the deep one is named
    good = json.dumps(chatgpt_conversations()[:2])[:-1].encode()
    data = good + b"," + b'{"mapping": {}, "id": "deep", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]"
    convs, report = _read("conversations.json", data)
    assert len(convs) == 2
    assert "levels deep" in report.errors[0].reason and report.errors[0].where == "record 2"
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 200, f"peak memory grew by {grown_mb:.0f} MB on nested input"


def test_depth_guard_follows_strings_across_chunks():
    doc = json.dumps([{"a": 'x[[[{{\\"]]' * 20, "b": [[["\\\\"]]], "c": '"' * 7, "d": "\\"}] * 50).encode()

    class Chunked:
        def __init__(self, size: int) -> None:
            self.buf, self.size = io.BytesIO(doc), size

        def read(self, n: int = -1) -> bytes:
            return self.buf.read(0 if n == 0 else self.size)

    for size in (1, 2, 3, 5, 64, 4096):
        guard = DepthGuard(Chunked(size), limit=5)
        while guard.read(size):
            pass
        assert guard.depth == 0
        tight = DepthGuard(Chunked(size), limit=4)
        try:
            while tight.read(size):
                pass
            raise AssertionError("depth 5 passed a limit of 4")
        except NestingTooDeep:
            pass


def test_one_malformed_line_among_good_ones():
    lines = [json.dumps({"id": f"c{i}", "conversations": [{"from": "human", "value": f"hi {i}"}, {"from": "gpt", "value": "hello"}]}) for i in range(4)]
    lines[2] = lines[2][:25]
    convs, report = _read("dataset.jsonl", ("\n".join(lines) + "\n").encode())
    assert [c.meta["dataset_id"] for c in convs] == ["c0", "c1", "c3"]
    (err,) = report.errors
    assert (err.file, err.where) == ("dataset.jsonl", "line 3") and err.raw is not None


def test_zip_member_escaping_the_folder_is_read_under_a_safe_name_and_nothing_written(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../../x.json", json.dumps(chatgpt_conversations()))
        zf.writestr("/abs/evil.json", json.dumps(chatgpt_conversations()))
        zf.writestr("ok/conversations.json", json.dumps(chatgpt_conversations()))
    upload = tmp_path / "in" / "upload.zip"
    upload.parent.mkdir()
    upload.write_bytes(buf.getvalue())
    report = ReadReport()
    convs = list(read_path(upload, report))
    assert len(convs) == 9 and report.errors == []
    assert sorted({c.source_file.rsplit("!", 1)[1] for c in convs}) == ["abs/evil.json", "ok/conversations.json", "x.json"]
    assert report.skipped["zip member with an unsafe name (read under a safe one)"] == 2
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["in", "upload.zip"]  # nothing written anywhere


def test_json_that_only_shares_key_names_is_refused_naming_the_near_miss():
    cases = {
        "es-mapping.json": {"mapping": {"properties": {"type": "keyword"}}},
        "turns.json": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}],
        "chatgpt-ish.json": [{"title": "t", "current_node": "n"}],
    }
    for name, value in cases.items():
        convs, report = _read(name, json.dumps(value).encode())
        assert convs == [], name
        [err] = report.errors
        assert err.file == name and "unrecognized format" in err.reason and "but not its shape" in err.reason, name
    convs, report = _read("empty.json", b"[]")
    assert convs == [] and "empty JSON array" in report.errors[0].reason


def test_damaged_zip():
    data = chatgpt_conversations()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("conversations.json", json.dumps(data))
    convs, report = _read("cut.zip", buf.getvalue()[:-30])
    assert convs == [] and report.errors[0].file == "cut.zip" and "zip" in report.errors[0].reason


def test_missing_input_path(tmp_path):
    report = ReadReport()
    assert list(read_path(tmp_path / "nope.json", report)) == []
    assert report.errors[0].reason == "no such file or folder"


def test_markdown_with_windows_line_ends_and_a_preamble_is_detected():
    from chatetl.samples import chat_export_markdown

    data = ("Exported by the extension\r\n\r\n" + chat_export_markdown().decode().replace("\n", "\r\n")).encode()
    convs, report = _read("chat.md", data)
    assert report.errors == []
    assert [m.text for m in convs[0].visible_turns][-1] == "The median is **5**."


def test_jsonl_whose_first_line_is_longer_than_the_detection_head_reads_line_by_line():
    """A big Claude conversation as the first JSONL line: still JSONL, so a bad line costs only itself."""
    def conv(i: int, words: int) -> str:
        return json.dumps({
            "uuid": f"c{i}", "name": f"chat {i}", "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
            "chat_messages": [
                {"uuid": f"m{i}a", "sender": "human", "text": "word " * words, "created_at": "2026-01-01T00:00:00Z"},
                {"uuid": f"m{i}b", "sender": "assistant", "text": "ok", "created_at": "2026-01-01T00:00:01Z"},
            ],
        })

    lines = [conv(0, 40_000), conv(1, 3), "{not json", conv(3, 3)]
    convs, report = _read("conversations.jsonl", ("\n".join(lines) + "\n").encode())
    assert [c.conversation_id for c in convs] == ["c0", "c1", "c3"]
    (err,) = report.errors
    assert err.where == "line 3"
