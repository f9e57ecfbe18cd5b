"""A number no JSON reader holds (NaN, Infinity, -Infinity, 1e999, an integer past 64 bits) or a
lone surrogate in one record of a ChatGPT or Claude.ai array costs only that value (issue 14, item 2):
the record and every one after it are read, the value is null (an integer too big for its int64
column too), the record is reported in its place with its bytes (quarantine) and counted as drift,
and the tables write. Times outside what a datetime holds are null and counted, and epoch seconds
of year 10000 are not taken for milliseconds."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow.parquet as pq
import pytest
from reader_inputs import chatgpt_record

from chatetl.ingest.upload import normalize_upload
from chatetl.normalize import Tuning, normalize_into
from chatetl.readers import Entry, ReadReport, read_path, timeutil
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.decode import decode, without_constants
from chatetl.storage import LocalObjectStore
from chatetl.tables import TableWriter

N = 100
BAD = {  # the value as written -> its drift name
    "NaN": "json.number_as_null:NaN",
    "Infinity": "json.number_as_null:Infinity",
    "-Infinity": "json.number_as_null:-Infinity",
    "1e999": "json.number_as_null:out_of_range",
    "-1e999": "json.number_as_null:out_of_range",
}


def _strict(text: str):
    def refuse(name):
        raise ValueError(name)

    return json.loads(text, parse_constant=refuse)


def _chatgpt(i: int) -> dict:
    record = chatgpt_record(f"c{i}", f"text {i}")
    node = record["mapping"]["m1"]["message"]
    node["content"] = {"content_type": "multimodal_text", "parts": [f"text {i}", {
        "content_type": "image_asset_pointer", "asset_pointer": f"file-service://f{i}", "size_bytes": 10 + i}]}
    node["create_time"] = 1767225600.0 + i
    return record


def _claude(i: int) -> dict:
    return {
        "uuid": f"c{i}", "name": f"chat {i}", "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:01:00Z",
        "chat_messages": [{
            "uuid": f"m{i}", "text": f"text {i}", "content": [{"type": "text", "text": f"text {i}"}], "sender": "human",
            "created_at": "2026-01-01T00:00:00Z",
            "attachments": [{"file_name": "notes.txt", "file_size": 10 + i, "extracted_content": "x"}],
        }],
    }


# where the bad value goes: a field no reader knows (kept in meta), a message time, an attachment size
SLOTS = {
    "chatgpt": {
        "unknown": lambda r: r.__setitem__("x_bad", "@@"),
        "time": lambda r: r["mapping"]["m1"]["message"].__setitem__("create_time", "@@"),
        "size": lambda r: r["mapping"]["m1"]["message"]["content"]["parts"][1].__setitem__("size_bytes", "@@"),
    },
    "claude-ai": {
        "unknown": lambda r: r.__setitem__("x_bad", "@@"),
        "time": lambda r: r["chat_messages"][0].__setitem__("created_at", "@@"),
        "size": lambda r: r["chat_messages"][0]["attachments"][0].__setitem__("file_size", "@@"),
    },
}
MAKE = {"chatgpt": _chatgpt, "claude-ai": _claude}


def _file(fmt: str, slot: str, pos: int, value: str) -> tuple[bytes, bytes]:
    """An array of N records of `fmt`, record `pos` holding `value` in `slot`: (file, that record's bytes)."""
    records = []
    for i in range(N):
        record = MAKE[fmt](i)
        if i == pos:
            SLOTS[fmt][slot](record)
        records.append(json.dumps(record).encode().replace(b'"@@"', value.encode()))
    return b"[" + b",\n".join(records) + b"]", records[pos]


def _normalize(path, tmp_path, workers: int = 1, tuning: Tuning | None = None):
    report = ReadReport()
    c, m = tmp_path / f"c{workers}.parquet", tmp_path / f"m{workers}.parquet"
    with TableWriter(c, m, batch_bytes=20_000) as writer:
        normalize_into(writer, [path], report, workers, tuning=tuning or Tuning())
    return pq.read_table(c), pq.read_table(m), report


def _value(fmt, slot, convs, msgs, pos):
    if slot == "unknown":
        return json.loads(convs.column("meta")[pos].as_py())["x_bad"]
    if slot == "time":
        return msgs.column("created_at")[pos].as_py()
    return msgs.column("attachments")[pos].as_py()[0]["size"]


@pytest.mark.parametrize("fmt", ["chatgpt", "claude-ai"])
@pytest.mark.parametrize("value", list(BAD))
@pytest.mark.parametrize("slot", ["unknown", "time", "size"])
@pytest.mark.parametrize("pos", [0, 41, N - 1])
def test_a_number_no_reader_holds_costs_only_itself(tmp_path, fmt, value, slot, pos):
    data, raw = _file(fmt, slot, pos, value)
    path = tmp_path / "conversations.json"
    path.write_bytes(data)
    convs, msgs, report = _normalize(path, tmp_path)
    assert convs.num_rows == N and msgs.num_rows == N  # nothing lost, the bad record neither
    assert report.formats == {fmt: 1}
    assert _value(fmt, slot, convs, msgs, pos) is None
    assert [(e.where, e.raw) for e in report.errors] == [(f"record {pos} (conversation c{pos})", raw)]
    assert f"read as null: {BAD[value].split(':')[1].replace('_', ' ')} (1)" in report.errors[0].reason
    assert report.drift[BAD[value]] == 1
    for text in convs.column("meta").to_pylist() + msgs.column("extra").to_pylist():
        if text is not None:
            _strict(text)  # what goes out is JSON
    if slot != "unknown":
        neighbour = pos + 1 if pos < N - 1 else pos - 1
        assert _value(fmt, slot, convs, msgs, neighbour) is not None


@pytest.mark.parametrize("fmt", ["chatgpt", "claude-ai"])
@pytest.mark.parametrize(("big", "counted"), [
    (2**63, True), (2**64 - 1, True),  # integers orjson reads exactly, too wide for the int64 column
    (2**64, False), (-(2**63) - 1, False),  # read as floats (by orjson itself): no size, as any float
])
def test_an_integer_past_64_bits_in_a_size_is_null_and_the_tables_write(tmp_path, fmt, big, counted):
    data, _ = _file(fmt, "size", 41, str(big))
    path = tmp_path / "conversations.json"
    path.write_bytes(data)
    convs, msgs, report = _normalize(path, tmp_path)
    assert convs.num_rows == N and _value(fmt, "size", convs, msgs, 41) is None
    assert _value(fmt, "size", convs, msgs, 42) == 52
    assert report.drift["json.number_as_null:integer_out_of_range"] == counted
    if counted:
        [err] = report.errors
        assert err.where == "record 41 (conversation c41)" and "read as null: integer out of range (1)" in err.reason
        assert json.loads(err.raw)["id" if fmt == "chatgpt" else "uuid"] == "c41"
    else:
        assert not report.errors


def test_an_integer_past_64_bits_elsewhere_is_kept_as_json_holds_it(tmp_path):
    data, _ = _file("chatgpt", "unknown", 3, str(2**63))
    path = tmp_path / "conversations.json"
    path.write_bytes(data)
    convs, _, report = _normalize(path, tmp_path)
    assert json.loads(convs.column("meta")[3].as_py())["x_bad"] == 2**63  # meta is JSON text: it holds it
    assert not report.errors


def test_a_lone_surrogate_is_replaced_and_the_tables_write(tmp_path):
    records = [json.dumps(_chatgpt(i)).encode() for i in range(N)]
    records[7] = records[7].replace(b'"text 7"', b'"text \\ud800 7"', 1)
    path = tmp_path / "conversations.json"
    path.write_bytes(b"[" + b",".join(records) + b"]")
    convs, msgs, report = _normalize(path, tmp_path)
    assert convs.num_rows == N and msgs.column("text")[7].as_py() == "text \ufffd 7"
    assert report.drift["json.lone_surrogate"] == 1
    assert [(e.where, e.raw) for e in report.errors] == [("record 7 (conversation c7)", records[7])]


@pytest.mark.parametrize("value", list(BAD))
def test_two_cores_read_bad_numbers_as_one_process(tmp_path, monkeypatch, value):
    path = tmp_path / "conversations.json"
    records = [json.dumps(_chatgpt(i)).encode() for i in range(N)]
    for pos in (0, 13, 14, 60):
        records[pos] = records[pos][:-1] + f', "x_bad": [{value}, 1], "y": {value}}}'.encode()
    path.write_bytes(b"[" + b",".join(records) + b"]")
    one = _normalize(path, tmp_path, 1)
    two = _normalize(path, tmp_path, 2, Tuning(records_bytes=3000))
    assert one[0].num_rows == N and one[0].equals(two[0]) and one[1].equals(two[1])
    assert [(e.where, e.reason, e.raw) for e in one[2].errors] == [(e.where, e.reason, e.raw) for e in two[2].errors]
    assert one[2].summary() == two[2].summary() and one[2].drift[BAD[value]] == 8


def test_the_upload_step_quarantines_the_record_and_keeps_the_rest(tmp_path):
    data, raw = _file("chatgpt", "unknown", 41, "NaN")
    store = LocalObjectStore(tmp_path / "bucket")
    store.put_bytes("uploads/x/conversations.json", data)
    result = normalize_upload(store, store.head("uploads/x/conversations.json"), "2026-03-01", workers=1)
    assert result.conversations == N
    parts = [k for k in result.quarantined if "/part-" in k]
    assert [store.get_bytes(k) for k in parts] == [raw]
    errors = json.loads(store.get_bytes(next(k for k in result.quarantined if k.endswith("errors.json"))))
    assert errors["errors"][0]["where"] == "record 41 (conversation c41)"


def test_jsonl_lines_read_bad_numbers_the_same_way(tmp_path):
    lines = [json.dumps(_claude(i)) for i in range(5)]
    lines[2] = lines[2][:-1] + ', "x_bad": NaN}'
    path = tmp_path / "conversations.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report = ReadReport()
    convs = list(read_path(path, report))
    assert len(convs) == 5 and convs[2].meta.get("x_bad", "missing") is None
    assert [e.where for e in report.errors] == ["line 3 (conversation c2)"] and report.drift["json.number_as_null:NaN"] == 1


def test_decode_reads_what_orjson_refuses_as_null_and_counts_it():
    value, found = decode(b'{"a": NaN, "b": [Infinity, -Infinity, 1e999, -1e999, 1.5], "c": 2, "d": "NaN"}')
    assert value == {"a": None, "b": [None, None, None, None, 1.5], "c": 2, "d": "NaN"}
    assert found == {"json.number_as_null:NaN": 1, "json.number_as_null:Infinity": 1,
                     "json.number_as_null:-Infinity": 1, "json.number_as_null:out_of_range": 2}
    assert decode(b'{"a": 1}') == ({"a": 1}, None)
    # integers as orjson reads them: exact to 2^64 - 1, past it a float; past the double range null
    value, found = decode(b'[NaN, 18446744073709551615, 18446744073709551616, -9223372036854775809, 1' + b"0" * 400 + b"]")
    assert value == [None, 2**64 - 1, float(2**64), float(-(2**63) - 1), None]
    assert found["json.number_as_null:out_of_range"] == 1
    value, found = decode(b'{"\\udc00k": ["a\\ud800", "ok"]}')
    assert value == {"\ufffdk": ["a\ufffd", "ok"]} and found == {"json.lone_surrogate": 2}
    with pytest.raises(ValueError):
        decode(b'{"a": nan}')


def test_without_constants_nulls_them_outside_strings_only():
    head = b'[{"title": "NaN and Infinity", "create_time": NaN, "x": [-Infinity, Infinity], "q": "a\\"NaN"'
    assert without_constants(head) == b'[{"title": "NaN and Infinity", "create_time": null, "x": [null, null], "q": "a\\"NaN"'
    assert without_constants(b'[{"a": 1}]') == b'[{"a": 1}]'


def _nan_in_the_first_records_head(value: str = "NaN") -> bytes:
    record = chatgpt_record("c0")
    record["create_time"] = "@@"  # before `mapping`: the head's parse stops at it
    return json.dumps([record, chatgpt_record("c1")]).encode().replace(b'"@@"', value.encode())


def test_detection_reads_past_a_nan_in_the_head_without_constants():
    assert detect(Entry.from_bytes("conversations.json", without_constants(_nan_in_the_first_records_head())))[0] is Format.CHATGPT


@pytest.mark.parametrize("value", list(BAD))
def test_a_nan_in_the_first_records_head_leaves_the_file_recognized(tmp_path, value):
    data = _nan_in_the_first_records_head(value)
    assert detect(Entry.from_bytes("conversations.json", data))[0] is Format.CHATGPT
    path = tmp_path / "conversations.json"
    path.write_bytes(data)
    report = ReadReport()
    convs = list(read_path(path, report))  # read, the bad record reported in its place
    assert [c.conversation_id for c in convs] == ["c0", "c1"] and convs[0].created_at is None
    assert report.formats == {"chatgpt": 1} and report.drift[BAD[value]] == 1


def test_a_nan_in_the_head_of_a_single_object_leaves_it_recognized():
    record = chatgpt_record("c0")
    record["create_time"] = "@@"
    data = json.dumps(record, indent=1).encode().replace(b'"@@"', b"NaN")
    assert detect(Entry.from_bytes("conversation.json", data))[0] is Format.CHATGPT


# ---- times (chatetl.readers.timeutil) ----


def _utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_epoch_seconds_and_milliseconds():
    assert timeutil.parse_time(1_700_000_000) == _utc(2023, 11, 14, 22, 13, 20)
    assert timeutil.parse_time(1_700_000_000_000) == _utc(2023, 11, 14, 22, 13, 20)  # milliseconds
    assert timeutil.parse_time(1.7e12) == _utc(2023, 11, 14, 22, 13, 20)
    assert timeutil.parse_time(253402300799) == _utc(9999, 12, 31, 23, 59, 59)  # the last second a datetime holds
    assert timeutil.parse_time(-5.0) == _utc(1969, 12, 31, 23, 59, 55)
    assert timeutil.parse_time("1700000000") == _utc(2023, 11, 14, 22, 13, 20)


@pytest.mark.parametrize("value", [
    253402300800,  # year 10000 in seconds: not 1978 in milliseconds
    "253402300800", 999_999_999_999, 1e300, -1e300, 10**30, float("nan"), float("inf"), 2**63, 253402300800000,
    "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00",
])
def test_times_out_of_range_are_null_and_counted(value):
    before = timeutil.out_of_range_count()
    assert timeutil.parse_time(value) is None
    assert timeutil.out_of_range_count() == before + 1


@pytest.mark.parametrize("value", [None, "", True, "x", "2024-13-01", [1]])
def test_what_is_no_time_is_null_and_not_counted(value):
    before = timeutil.out_of_range_count()
    assert timeutil.parse_time(value) is None
    assert timeutil.out_of_range_count() == before


def test_a_reader_counts_times_out_of_range_as_drift(tmp_path):
    records = [_chatgpt(i) for i in range(3)]
    records[1]["create_time"] = 253402300800
    records[1]["mapping"]["m1"]["message"]["create_time"] = 1e300
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(records))
    report = ReadReport()
    convs = list(read_path(path, report))
    assert convs[1].created_at is None and convs[1].messages[0].created_at is None
    assert convs[0].created_at == _utc(2026, 1, 1) and not report.errors
    assert report.drift["time.out_of_range"] == 2


# ---- an escaped lone surrogate (`\udc00`) anywhere: read as U+FFFD, never a crash ----


def _claude_line(i: int, text: str | None = None) -> str:
    record = _claude(i)
    message = record["chat_messages"][0]
    message["text"] = message["content"][0]["text"] = text or f"text {i}"
    return json.dumps(record)


def _code_line(i: int, text: str) -> str:
    return json.dumps({"type": "user", "uuid": f"u{i}", "parentUuid": f"u{i - 1}" if i else None, "sessionId": "s1",
                       "timestamp": f"2026-01-01T00:00:0{i}Z", "message": {"role": "user", "content": text}})


LONE = "text \udc00 x"  # json.dumps writes it as the escape `\udc00`, which orjson and ijson's C backend refuse
SURROGATE_FILES = {  # name -> (file name, bytes, format, where the report names the repaired record)
    "claude-ai jsonl, first line": ("conversations.jsonl", "\n".join([_claude_line(0, LONE), _claude_line(1)]) + "\n",
                                    "claude-ai", "line 1 (conversation c0)"),
    "claude-ai jsonl, one line": ("conversations.jsonl", _claude_line(0, LONE) + "\n", "claude-ai", "conversation c0"),
    "claude-ai array, first record": ("conversations.json", f"[{_claude_line(0, LONE)}, {_claude_line(1)}]",
                                      "claude-ai", "record 0 (conversation c0)"),
    "chatgpt object": ("conversation.json", json.dumps(chatgpt_record("c0", LONE), indent=1), "chatgpt", "conversation c0"),
    "claude-code, first line": ("s1.jsonl", "\n".join([_code_line(0, LONE), _code_line(1, "next")]) + "\n", "claude-code", "line 1"),
    "claude-code, second line": ("s1.jsonl", "\n".join([_code_line(0, "first"), _code_line(1, LONE)]) + "\n", "claude-code", "line 2"),
}


@pytest.mark.parametrize("case", list(SURROGATE_FILES))
def test_a_lone_surrogate_escape_is_read_as_a_replacement_character(tmp_path, case):
    """Before: `\\udc00` in the first record's head raised UnicodeDecodeError out of detection (ijson's C
    backend), and a Claude Code line (read by json.loads) carried the surrogate into the tables, where
    Arrow raised UnicodeEncodeError: either stopped the whole upload."""
    name, text, fmt, where = SURROGATE_FILES[case]
    assert "\\udc00" in text
    path = tmp_path / name
    path.write_text(text)
    assert detect(Entry.from_path(path))[0] is Format(fmt)
    _convs, msgs, report = _normalize(path, tmp_path)
    assert report.formats == {fmt: 1} and msgs.num_rows == (1 if fmt == "chatgpt" or "one line" in case else 2)
    texts = msgs.column("text").to_pylist()
    assert "text \ufffd x" in texts and not any("\udc00" in t for t in texts if t)
    n = text.count("\\udc00")  # (a Claude.ai message says its text twice: `text` and `content`)
    assert report.drift["json.lone_surrogate"] == n
    [err] = report.errors  # reported in its place, its bytes kept for quarantine
    assert (err.where, err.reason) == (where, f"lone surrogates replaced by U+FFFD ({n})") and err.raw


def test_a_lone_surrogate_in_json_text_inside_a_string_never_reaches_the_tables(tmp_path):
    """JSON inside a string (a ShareGPT function call's value, an Open WebUI tool attribute) was read by
    json.loads, which keeps a lone surrogate: the tool's name or output then stopped the table write."""
    sharegpt = {"id": "s0", "conversations": [
        {"from": "human", "value": "hi"}, {"from": "function_call", "value": '{"name": "\\udc00x", "arguments": {}}'},
        {"from": "observation", "value": '{"name": "\\udc00y", "content": 1}'}, {"from": "gpt", "value": "ok"}]}
    block = ('<details type="tool_calls" done="true" id="k1" name="look" arguments="&quot;\\udc00a&quot;" '
             'result="{&quot;r&quot;: &quot;\\udc00b&quot;}">\n<summary>Tool Executed</summary>\n</details>\nDone.')
    messages = {"u": {"id": "u", "parentId": None, "childrenIds": ["a"], "role": "user", "content": "go", "timestamp": 1767225600},
                "a": {"id": "a", "parentId": "u", "childrenIds": [], "role": "assistant", "content": block, "timestamp": 1767225601}}
    webui = [{"id": "w0", "user_id": "u1", "title": "t", "updated_at": 1767225700, "created_at": 1767225600,
              "chat": {"models": ["m"], "history": {"messages": messages, "currentId": "a"}, "messages": []}}]
    for name, data, fmt in (("data.jsonl", json.dumps(sharegpt) + "\n", "sharegpt"), ("chats.json", json.dumps(webui), "open-webui")):
        path = tmp_path / name
        path.write_text(data)
        convs, msgs, report = _normalize(path, tmp_path)
        assert report.formats == {fmt: 1} and convs.num_rows == 1 and not report.errors
        calls = [c for row in msgs.column("tool_calls").to_pylist() for c in row or []]
        results = [r for row in msgs.column("tool_results").to_pylist() for r in row or []]
        assert calls and all("\udc00" not in json.dumps(c, ensure_ascii=False) for c in calls + results)
        assert any("\\udc00" in (c["input"] or "") for c in calls)  # kept as the text it was written as
