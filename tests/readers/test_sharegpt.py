"""ShareGPT datasets: arrays or JSONL of {"id", "conversations": [{"from", "value"}], "system"?, "tools"?}."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from chatetl.model import MessageKind, Role, Source
from chatetl.readers import ReadReport, read_path
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms.sharegpt import read

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "samples" / "sharegpt" / "fastchat-dummy_conversation.json"


def write(tmp_path, name, content):
    p = tmp_path / name
    p.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return p


def read_all(path):
    report = ReadReport()
    return list(read_path(path, report)), report


@pytest.mark.skipif(not SAMPLE.exists(), reason="shared samples not present")
def test_real_fastchat_sample():
    records = json.loads(SAMPLE.read_text(encoding="utf-8"))
    convs, report = read_all(SAMPLE)
    assert report.errors == [] and report.drift == {} and report.formats == {"sharegpt": 1}
    assert len(convs) == len(records) == 500
    assert report.messages == sum(len(r["conversations"]) for r in records) == 2000
    assert [c.meta["dataset_id"] for c in convs] == [r["id"] for r in records]
    for conv, rec in zip(convs, records):
        assert conv.source is Source.SHAREGPT and conv.platform == "unknown"
        assert [m.text for m in conv.messages] == [t["value"] for t in rec["conversations"]]
        assert [m.role for m in conv.messages] == [Role.USER if t["from"] == "human" else Role.ASSISTANT for t in rec["conversations"]]
        assert conv.message_count == len(rec["conversations"])  # every turn visible, one linear branch
    first = convs[0]
    assert first.meta["dataset_id"] == "identity_0" and first.conversation_id.startswith("identity_0~") and first.messages[0].text == "Who are you?"
    cid = first.conversation_id
    assert first.messages[1].parent_id == f"{cid}:0" and first.current_node == f"{cid}:3"


RECORD = {
    "id": "tool_demo_1",
    "system": "You can call tools.",
    "tools": '[{"name": "get_weather", "parameters": {"city": "string"}}]',
    "conversations": [
        {"from": "human", "value": "Weather in Oslo?"},
        {"from": "function_call", "value": '{"name": "get_weather", "arguments": {"city": "Oslo"}}'},
        {"from": "observation", "value": '{"temp_c": 4}'},
        {"from": "gpt", "value": "It is 4 °C in Oslo."},
        {"from": "user", "value": "Thanks"},
        {"from": "assistant", "value": "You're welcome."},
        {"from": "system", "value": "Mid-chat system note."},
        {"from": "chatgpt", "value": "a"},
        {"from": "bard", "value": "b"},
        {"from": "model", "value": "c"},
    ],
}


def test_roles_system_tools_and_tool_calls(tmp_path):
    [c], report = read_all(write(tmp_path, "data.json", [RECORD]))
    assert report.errors == [] and report.drift == {}
    assert c.meta["dataset_id"] == "tool_demo_1"
    assert c.meta["tools"] == RECORD["tools"]
    got = [(m.role, m.kind) for m in c.messages]
    assert got == [
        (Role.SYSTEM, MessageKind.HIDDEN),  # the top-level system prompt comes first
        (Role.USER, MessageKind.TURN),
        (Role.ASSISTANT, MessageKind.TOOL_CALL),
        (Role.TOOL, MessageKind.TOOL_RESULT),
        (Role.ASSISTANT, MessageKind.TURN),
        (Role.USER, MessageKind.TURN),
        (Role.ASSISTANT, MessageKind.TURN),
        (Role.SYSTEM, MessageKind.HIDDEN),
        (Role.ASSISTANT, MessageKind.TURN),
        (Role.ASSISTANT, MessageKind.TURN),
        (Role.ASSISTANT, MessageKind.TURN),
    ]
    system, call, result = c.messages[0], c.messages[2], c.messages[3]
    assert system.text == "You can call tools."
    [tc] = call.tool_calls
    assert tc.name == "get_weather" and tc.input == RECORD["conversations"][1]["value"] and tc.id is None
    [tr] = result.tool_results
    assert tr.output == '{"temp_c": 4}' and tr.tool_call_id is None  # no ids in ShareGPT: never paired by position
    assert [m.message_id for m in c.messages[:3]] == [f"{c.conversation_id}:{i}" for i in range(3)]
    assert all(m.parent_id == prev.message_id for prev, m in zip(c.messages, c.messages[1:]))
    assert c.message_count == 7


def test_function_call_value_that_is_not_json(tmp_path):
    rec = {"id": "x", "conversations": [{"from": "function_call", "value": "search(oslo)"}]}
    [c], _ = read_all(write(tmp_path, "d.json", [rec]))
    assert c.messages[0].tool_calls[0].name is None and c.messages[0].tool_calls[0].input == "search(oslo)"


def test_unknown_from_is_drift_and_hidden(tmp_path):
    rec = {"id": "u1", "conversations": [{"from": "human", "value": "hi"}, {"from": "critic", "value": "meh"}, {"from": "Prompter2", "value": "p"}]}
    [c], report = read_all(write(tmp_path, "d.json", [rec]))
    assert report.drift == {"sharegpt.from:critic": 1, "sharegpt.from:Prompter2": 1}
    critic, prompter = c.messages[1], c.messages[2]
    assert (critic.kind, critic.role, critic.extra["from"]) == (MessageKind.HIDDEN, Role.ASSISTANT, "critic")
    assert (prompter.kind, prompter.role) == (MessageKind.HIDDEN, Role.USER)  # best guess from the name
    assert c.message_count == 1


def test_platform_and_model_from_the_record(tmp_path):
    recs = [
        {"id": "a", "platform": "Claude", "conversations": [{"from": "human", "value": "x"}]},
        {"id": "b", "model": "gpt-4o-mini", "conversations": [{"from": "human", "value": "x"}]},
        {"id": "c", "model": "llama-3-8b", "conversations": [{"from": "human", "value": "x"}]},
    ]
    convs, _ = read_all(write(tmp_path, "d.json", recs))
    assert [(c.platform, c.model) for c in convs] == [("claude-ai", None), ("chatgpt", "gpt-4o-mini"), ("unknown", "llama-3-8b")]


def test_missing_id_gets_a_content_uuid5(tmp_path):
    rec = {"conversations": [{"from": "human", "value": "Who are you?"}, {"from": "gpt", "value": "A model."}]}
    other = {"conversations": [{"from": "human", "value": "Who are you?"}, {"from": "gpt", "value": "Another model."}]}
    convs, report = read_all(write(tmp_path, "d.json", [rec, other]))
    a, c = (x.conversation_id for x in convs)
    assert a != c  # a shared first question does not collide
    uuid.UUID(a)
    again, _ = read_all(write(tmp_path, "e.json", [rec]))
    assert again[0].conversation_id == a  # the same content, the same id
    assert report.errors == []


def test_numeric_id_and_unknown_record_and_turn_fields(tmp_path):
    rec = {"id": 7, "lang": "en", "conversations": [{"from": "human", "value": "x", "weight": 0}, {"from": "gpt", "value": ["not", "text"]}]}
    [c], report = read_all(write(tmp_path, "d.json", [rec]))
    assert c.meta["dataset_id"] == "7" and c.meta["lang"] == "en"
    assert c.messages[0].extra == {"weight": 0}
    assert c.messages[1].text == '["not", "text"]'
    assert report.drift == {"sharegpt.field:lang": 1, "sharegpt.turn_field:weight": 1}


def test_role_content_turns_read_too(tmp_path):
    rec = {"id": "oa", "conversations": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    [c], report = read_all(write(tmp_path, "d.json", [rec]))
    assert [(m.role, m.text) for m in c.messages] == [(Role.USER, "hi"), (Role.ASSISTANT, "hello")]
    assert report.drift == {}


def test_jsonl_with_one_malformed_line(tmp_path):
    lines = [
        json.dumps({"id": "l1", "conversations": [{"from": "human", "value": "a"}]}),
        '{"id": "l2", "conversations": [{"from": "human", "value": ',
        json.dumps({"id": "l3", "conversations": [{"from": "human", "value": "c"}]}),
    ]
    p = write(tmp_path, "d.jsonl", "\n".join(lines) + "\n")
    convs, report = read_all(p)
    assert [c.meta["dataset_id"] for c in convs] == ["l1", "l3"]
    [err] = report.errors
    assert err.file == str(p) and err.where == "line 2" and "invalid JSON" in err.reason
    assert report.formats == {"sharegpt": 1}


def test_truncated_array_keeps_the_records_before_the_cut(tmp_path):
    recs = [{"id": f"t{i}", "conversations": [{"from": "human", "value": "x" * 50}]} for i in range(5)]
    text = json.dumps(recs)
    p = write(tmp_path, "d.json", text[: text.index('"t3"') + 10])
    convs, report = read_all(p)
    assert [c.meta["dataset_id"] for c in convs] == ["t0", "t1", "t2"]
    [err] = report.errors
    assert "truncated" in err.reason and err.where == "after record 2"


def test_wrong_shapes_are_reported_per_record(tmp_path):
    recs = [
        {"id": "ok1", "conversations": [{"from": "human", "value": "a"}]},
        {"id": "bad1", "conversations": "human: a"},
        {"id": "ok2", "conversations": [{"from": "human", "value": "b"}, "gpt: b", {"from": "gpt", "value": "c"}]},
        "not a record",
    ]
    p = write(tmp_path, "d.json", recs)
    convs, report = read_all(p)
    assert [c.meta["dataset_id"] for c in convs] == ["ok1", "ok2"]
    assert [m.text for m in convs[1].messages] == ["b", "c"]
    reasons = [(e.where, e.reason) for e in report.errors]
    assert reasons[0][0] == "record 1 (conversation bad1)" and "`conversations` is str" in reasons[0][1]
    assert reasons[1][0] == "record 2 turn 1" and "not an object" in reasons[1][1]
    assert reasons[2][0] == "record 3" and "expected a ShareGPT record object" in reasons[2][1]


def test_detection_and_direct_call():
    data = json.dumps({"id": "j", "conversations": [{"from": "human", "value": "x"}]}).encode()
    jsonl = data + b"\n" + data.replace(b'"x"', b'"y"') + b"\n"
    assert detect(Entry.from_bytes("a", b"[" + data + b"]")) == (Format.SHAREGPT, Shape.ARRAY)
    assert detect(Entry.from_bytes("b", jsonl)) == (Format.SHAREGPT, Shape.JSONL)
    report = ReadReport()
    convs = list(read(Entry.from_bytes("b.jsonl", jsonl), Shape.JSONL, report))
    assert len(convs) == 2 and report.conversations == 2 and convs[0].source_file == "b.jsonl"


def test_two_datasets_reusing_an_id_stay_two_conversations(tmp_path):
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text(json.dumps({"id": "identity_0", "conversations": [{"from": "human", "value": "Who are you?"}, {"from": "gpt", "value": "A"}]}) + "\n")
    b.write_text(json.dumps({"id": "identity_0", "conversations": [{"from": "human", "value": "Who are you?"}, {"from": "gpt", "value": "B"}]}) + "\n")
    report = ReadReport()
    convs = list(read_path(a, report)) + list(read_path(b, report)) + list(read_path(a, report))
    assert [c.meta["dataset_id"] for c in convs] == ["identity_0"] * 3
    assert convs[0].key != convs[1].key  # different chats: never merged into one node
    assert convs[0].key == convs[2].key  # the same chat read again: the same key


# --- records that repeat -------------------------------------------------------------------------

def _turns(*texts):
    return [{"from": "human" if i % 2 == 0 else "gpt", "value": t} for i, t in enumerate(texts)]


REPEATS = [
    {"id": "identity_0", "conversations": _turns("Who are you?", "A model.")},
    {"id": "identity_1", "conversations": _turns("Hi", "Hello")},
    {"conversations": _turns("Hi", "Hello"), "id": "identity_0"},  # another record under a taken id
    {"conversations": _turns("Who are you?", "A model."), "id": "identity_0"},  # a repeat (keys in another order)
    {"id": "identity_0", "conversations": _turns("Who are you?", "A model."), "lang": "en"},  # same turns, one more field
    {"id": "c1", "platform": "claude", "conversations": _turns("Plan a trip", "Where to?")},
    {"id": "c1", "platform": "claude", "conversations": _turns("Plan a party", "How many guests?")},  # the platform's id reused
    {"id": "c1", "platform": "claude", "conversations": _turns("Plan a trip", "Where to?")},  # a repeat
    {"conversations": _turns("no id", "none")},
    {"conversations": _turns("no id", "none")},  # a repeat of a record without an id
]


@pytest.mark.parametrize("shape", ["array", "jsonl"])
def test_repeated_records_never_repeat_ids(tmp_path, shape):
    text = json.dumps(REPEATS) if shape == "array" else "".join(json.dumps(r) + "\n" for r in REPEATS)
    path = write(tmp_path, f"d.{'json' if shape == 'array' else 'jsonl'}", text)
    convs, report = read_all(path)
    assert report.errors == [] and report.skipped == {"sharegpt.duplicate record": 3}
    assert report.conversations == len(convs) == 7
    keys = [c.key for c in convs]
    assert len(set(keys)) == len(keys)
    message_ids = [(c.key, m.message_id) for c in convs for m in c.messages]
    assert len(set(message_ids)) == len(message_ids)
    seqs = [(c.key, m.seq) for c in convs for m in c.messages if m.seq is not None]
    assert len(set(seqs)) == len(seqs)
    first, second, shared_turns, extra_field, trip, party, no_id = convs
    # a dataset id keeps its content digest; a different record under a taken id gets its own
    assert shared_turns.conversation_id.startswith("identity_0~") and shared_turns.meta["dataset_id"] == "identity_0"
    assert [m.text for m in shared_turns.messages] == ["Hi", "Hello"]
    assert extra_field.conversation_id.startswith(first.conversation_id + "~") and extra_field.meta["shared_id"] == first.conversation_id
    assert extra_field.meta["lang"] == "en"
    assert (trip.conversation_id, party.meta["shared_id"]) == ("c1", "c1")
    assert party.conversation_id.startswith("c1~") and len(party.conversation_id) == len("c1~") + 8
    assert [m.text for m in party.messages] == ["Plan a party", "How many guests?"]
    assert no_id.meta == {} and second.meta == {"dataset_id": "identity_1"}
    # deterministic: the same file, the same ids
    again, _ = read_all(path)
    assert [c.key for c in again] == keys


def test_repeats_in_the_normalized_tables_pass_the_table_checks(tmp_path):
    from chatetl.ingest.checks import check_normalized_pair
    from chatetl.tables import TableWriter, read_rows

    convs, _ = read_all(write(tmp_path, "d.json", REPEATS + REPEATS))
    with TableWriter(tmp_path / "c.parquet", tmp_path / "m.parquet") as writer:
        for c in convs:
            writer.add(c, upload_key="raw/d.json")
    checks = check_normalized_pair(tmp_path / "c.parquet", tmp_path / "m.parquet", "d.json")
    assert all(r.passed for r in checks.values()), {k: r.problems for k, r in checks.items()}
    rows = list(read_rows(tmp_path / "m.parquet", ["conversation_key", "message_id"]))
    assert len(rows) == len({(r["conversation_key"], r["message_id"]) for r in rows}) == 14


def test_fingerprints_are_a_bounded_table_not_the_records(monkeypatch):
    from chatetl.readers.platforms import sharegpt

    table = sharegpt.Fingerprints(capacity=10_000, slots=8)
    keys = [sharegpt._digest(f"id-{i}") for i in range(5_000)]
    for i, key in enumerate(keys):
        assert table.put(key, i.to_bytes(8, "little"))
    assert len(table) == 5_000 and len(table._table) <= 32 * 5_000  # 16 bytes a slot, at most half empty
    assert all(table.get(key) == i.to_bytes(8, "little") for i, key in enumerate(keys))
    assert table.get(sharegpt._digest("not there")) is None
    assert table.put(bytes(8), b"zeroszer") and table.get(bytes(8)) == b"zeroszer"  # the empty marker is still a key
    small = sharegpt.Fingerprints(capacity=2)
    assert small.put(keys[0], b"a" * 8) and small.put(keys[1], b"b" * 8) and not small.put(keys[2], b"c" * 8)
    assert small.put(keys[0], b"d" * 8) and small.get(keys[0]) == b"d" * 8  # a known key is still updated

    # past the bound, records still read; repeats not remembered are no longer caught (and counted)
    monkeypatch.setattr(sharegpt, "MAX_FINGERPRINTS", 2)
    recs = [{"id": f"r{i}", "conversations": _turns(f"q{i}", "a")} for i in range(3)]
    report = ReadReport()
    convs = list(read(Entry.from_bytes("d.json", json.dumps(recs + recs[:1]).encode()), Shape.ARRAY, report))
    assert len(convs) == 3 and report.skipped == {"sharegpt.records past the duplicate check": 1, "sharegpt.duplicate record": 1}


def test_empty_turns_are_hidden_whoever_sent_them(tmp_path):
    rec = {"id": "e", "conversations": _turns("q", "", "  ", "a") + [{"from": "observation", "value": ""}]}
    [c], _ = read_all(write(tmp_path, "d.json", [rec]))
    assert [(m.role, m.kind, m.extra.get("empty")) for m in c.messages] == [
        (Role.USER, MessageKind.TURN, None),
        (Role.ASSISTANT, MessageKind.HIDDEN, True),
        (Role.USER, MessageKind.HIDDEN, True),
        (Role.ASSISTANT, MessageKind.TURN, None),
        (Role.TOOL, MessageKind.TOOL_RESULT, None),
    ]
    assert [m.seq for m in c.visible_turns] == [0, 1] and c.message_count == 2
