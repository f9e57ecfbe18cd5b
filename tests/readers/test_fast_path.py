"""The normalize fast path (arrays cut by chatetl.readers.splitter and decoded by orjson, the
columnar TableWriter) writes the same tables as the reference path (ijson behind the DepthGuard,
rows through Table.from_pylist), row order included, and reports the same errors in the same
places; past the reference, it reads on after a record nested too deep or not decodable."""

from __future__ import annotations

import copy
import io
import json

import pyarrow.parquet as pq
import pytest

from chatetl import tables
from chatetl.readers import ReadReport, jsonstream, read_path
from chatetl.readers.depthguard import MAX_JSON_DEPTH
from chatetl.readers.splitter import ArraySplitter, BadRecord, SplitError
from chatetl.samples import chatgpt_conversations, chatgpt_export, claude_export


def _generated_chatgpt(copies: int = 25) -> list[dict]:
    """The sample chats (branches, tools, reasoning, citations, attachments, hidden context) many
    times over under new ids, with look-alikes of a record boundary inside strings."""
    out = []
    for i in range(copies):
        for conv in chatgpt_conversations():
            conv = copy.deepcopy(conv)
            conv["id"] = conv["conversation_id"] = f"{conv['conversation_id']}-{i}"
            node = next(n for n in conv["mapping"].values() if n.get("message") and n["message"]["content"].get("parts"))
            node["message"]["content"]["parts"].append('a look-alike: }, {"title": "no", "mapping": {}} ] and \\" }, {')
            conv["unknown_field"] = {"kept": [i, {"deep": [[i]]}]}
            out.append(conv)
    # damaged records, read today as they are: no mapping; a dangling parent and a cycle; not an object
    out.insert(7, {"title": "no mapping", "id": "bad-1"})
    broken = copy.deepcopy(out[3])
    broken["id"] = broken["conversation_id"] = "broken-tree"
    ids = [k for k, n in broken["mapping"].items() if n.get("message")]
    broken["mapping"][ids[1]]["parent"] = "nowhere"
    broken["mapping"][ids[2]]["parent"] = ids[3]
    broken["mapping"][ids[3]]["parent"] = ids[2]
    out.insert(20, broken)
    out.insert(30, [1, 2, 3])
    out.insert(40, {"title": "numbers", "id": "n", "mapping": {}, "x": 2**62, "y": 1.5e300, "z": -0.0, "w": 1e-320})
    return out


def _over_deep(depth: int = 100_000) -> bytes:
    return b'{"title": "deep", "id": "deep", "mapping": {}, "x": ' + b"[" * depth + b"]" * depth + b"}"


def _tables(path, tmp_path, fast: bool, monkeypatch):
    monkeypatch.setattr(jsonstream, "FAST", fast)
    report = ReadReport()
    out = tmp_path / ("fast" if fast else "reference")
    out.mkdir()
    with tables.TableWriter(out / "c.parquet", out / "m.parquet", columnar=fast, batch_bytes=50_000) as writer:
        for conv in read_path(path, report):
            writer.add(conv)
    errors = [(e.file, e.where, e.reason, e.raw) for e in report.errors]
    return pq.read_table(out / "c.parquet"), pq.read_table(out / "m.parquet"), errors, report.summary()


def _same(path, tmp_path, monkeypatch):
    fast = _tables(path, tmp_path, True, monkeypatch)
    ref = _tables(path, tmp_path, False, monkeypatch)
    assert fast[0].num_rows and fast[1].num_rows
    assert fast[0].equals(ref[0]) and fast[1].equals(ref[1])
    assert fast[2] == ref[2]
    assert fast[3] == ref[3]
    return fast


@pytest.mark.parametrize("indent", [None, 1])
def test_generated_chatgpt_file_gives_the_reference_tables(tmp_path, monkeypatch, indent):
    body = json.dumps(_generated_chatgpt(), indent=indent).encode()
    path = tmp_path / "conversations.json"
    # the over-deep record last: the reference path stops reading there
    path.write_bytes(body[:-1].rstrip() + b",\n" + _over_deep() + b"\n]\n")
    convs, msgs, errors, summary = _same(path, tmp_path, monkeypatch)
    assert convs.num_rows == 25 * 3 + 2  # the broken tree and the numbers read; no mapping, a list and the deep one not
    wheres = [(where, reason.split(":")[0]) for _, where, reason, _ in errors]
    assert ("record 7 (conversation bad-1)", "ValueError") in wheres and ("record 30", "ValueError") in wheres
    assert any(where.startswith("record 20") and "damaged message tree" in reason for _, where, reason, _ in errors)
    assert errors[-1][1] == f"record {25 * 3 + 4}" and f"more than {MAX_JSON_DEPTH} levels" in errors[-1][2]


def test_sharded_chatgpt_zip_and_claude_export_give_the_reference_tables(tmp_path, monkeypatch):
    for name, data in (("chatgpt.zip", chatgpt_export(shards=2)), ("claude.zip", claude_export())):
        path = tmp_path / name
        path.write_bytes(data)
        work = tmp_path / name.replace(".", "_")
        work.mkdir()
        _same(path, work, monkeypatch)


def test_truncated_file_is_reported_like_the_reference(tmp_path, monkeypatch):
    body = json.dumps(_generated_chatgpt(2)).encode()
    path = tmp_path / "conversations.json"
    path.write_bytes(body[: len(body) * 2 // 3])
    fast = _tables(path, tmp_path, True, monkeypatch)
    ref = _tables(path, tmp_path, False, monkeypatch)
    assert fast[0].equals(ref[0]) and fast[1].equals(ref[1])
    assert [(f, w) for f, w, _, _ in fast[2]] == [(f, w) for f, w, _, _ in ref[2]]
    assert "invalid or truncated JSON" in fast[2][-1][2]


def test_fast_path_reads_on_past_a_record_too_deep_or_not_decodable(tmp_path):
    good = [json.dumps(c).encode() for c in chatgpt_conversations()]
    # (an integer past 64 bits, which stops ijson, reads too)
    good[2] = good[2][:-1] + b', "big": ' + str(2**70).encode() + b"}"
    data = b"[" + b",".join([good[0], _over_deep(), good[1], b'{"title": "x", "id": tru}', good[2]]) + b"]"
    path = tmp_path / "conversations.json"
    path.write_bytes(data)
    report = ReadReport()
    convs = list(read_path(path, report))
    assert [c.title for c in convs] == [json.loads(g)["title"] for g in good]
    assert convs[2].meta["big"] == 2**70
    (deep, bad) = report.errors
    assert deep.where == "record 1" and f"more than {MAX_JSON_DEPTH} levels" in deep.reason and deep.raw is None
    assert bad.where == "record 3" and "invalid JSON" in bad.reason and bad.raw == b'{"title": "x", "id": tru}'


def test_depth_limit_is_the_guards():
    # the array is one level: a record may nest 511 levels itself, not 512
    def deep(n: int) -> bytes:
        return b'[{"a": 1}, {"x": ' + b"[" * n + b"]" * n + b'}, {"a": 2}]'

    for n, ok in ((MAX_JSON_DEPTH - 2, True), (MAX_JSON_DEPTH - 1, False), (700, False), (1100, False)):
        items = list(ArraySplitter(io.BytesIO(deep(n)), chunk=64))
        assert len(items) == 3 and isinstance(items[1], BadRecord) is not ok, n


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
def test_splitter_any_chunking_and_any_value(chunk):
    values = [{"a": '}, {"a": 1} ]'}, [1, {"b": "\\\\"}], "x]}", 3, -1.5e-3, True, None, {"a": [{"b": {}}, {}]}, {}, []]
    for doc in ([], values):
        for indent in (None, 2):
            raw = json.dumps(doc, indent=indent).encode()
            got = [item[1] for item in ArraySplitter(io.BytesIO(raw), chunk=chunk)]
            assert got == doc


@pytest.mark.parametrize("data", [b'[{"a": 1}', b'[{"a": 1},', b'[{"a": 1}] x', b'{"a": 1}', b'[{"a": 1} {"a": 2}]', b'["abc'])
def test_splitter_refuses_a_damaged_array(data):
    with pytest.raises(SplitError):
        list(ArraySplitter(io.BytesIO(data), chunk=3))
