"""The normalize fast path (arrays cut by chatetl.readers.jsonscan.splitter and decoded by orjson, the
columnar TableWriter) writes the same tables as the reference path (ijson behind the DepthGuard,
rows through Table.from_pylist), row order included, and reports the same errors in the same
places; past the reference, it reads on after a record nested too deep or not decodable."""

from __future__ import annotations

import copy
import io
import json
from datetime import UTC

import pyarrow.parquet as pq
import pytest

from chatetl import tables
from chatetl.readers import ReadReport, convert, read_path
from chatetl.readers.jsonscan import records as jsonstream
from chatetl.readers.jsonscan.depthguard import MAX_JSON_DEPTH
from chatetl.readers.jsonscan.splitter import ArraySplitter, BadRecord, SplitError
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
    convs, _, errors, _ = _same(path, tmp_path, monkeypatch)
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


@pytest.mark.parametrize("chunk", [5, 64, 1 << 20])
def test_cutting_without_decoding_and_reading_on_from_a_record(chunk):
    """prove=False (the two-core path's cut): records end where the next one opens like the first,
    not decoded (value None) but the first; a look-alike (a list of objects inside a record that
    open like the records) cuts short there, and `from_record` reads on from that record's start
    with the places of the whole file."""
    records = [{"title": f"t{i}", "id": i, "text": "x" * i} for i in range(8)]
    records[5]["items"] = [{"title": "a", "id": 1}, {"title": "b", "id": 2}]
    raw = json.dumps(records).encode()
    proven = [(bytes(item[0]), item[1]) for item in ArraySplitter(io.BytesIO(raw), chunk=chunk)]
    assert [v for _, v in proven] == records
    cut = ArraySplitter(io.BytesIO(raw), chunk=chunk, prove=False)
    items = []
    for item in cut:
        items.append((cut.records - 1, cut.offset, bytes(item[0]), item[1]))
    assert items[0][3] == records[0] and all(v is None for *_, v in items[1:])
    assert [r for _, _, r, _ in items[:5]] == [r for r, _ in proven[:5]]
    index, offset, short, _ = items[5]
    assert short != proven[5][0] and proven[5][0].startswith(short) and raw[offset:].startswith(short)
    again = ArraySplitter.from_record(io.BytesIO(raw), index, offset, chunk=chunk, prove=False)
    rest = []
    for item in again:
        rest.append((again.records - 1, again.offset, bytes(item[0]), item[1]))
    assert rest[0] == (5, offset, proven[5][0], records[5])  # decoded: the opening is learned again
    assert [(i, r) for i, _, r, _ in rest] == [(i, r) for i, (r, _) in enumerate(proven) if i >= 5]
    assert all(raw[o:o + len(r)] == r for _, o, r, _ in rest)


@pytest.mark.parametrize("data", [b'[{"a": 1}', b'[{"a": 1},', b'[{"a": 1}] x', b'{"a": 1}', b'[{"a": 1} {"a": 2}]', b'["abc'])
def test_splitter_refuses_a_damaged_array(data):
    with pytest.raises(SplitError):
        list(ArraySplitter(io.BytesIO(data), chunk=3))


# ---- the fast construction (Model.fast / of_fields, assignment through __dict__) against the
# pydantic-validated conversion as it was (tests/legacy_readers.py, frozen from afdc011) ----


def _reference_reader(monkeypatch):
    """The reference path of _tables, with the frozen conversion and branch resolver."""
    import legacy_readers

    from chatetl.readers.platforms import chatgpt

    monkeypatch.setattr(chatgpt, "conversation_from_chatgpt", legacy_readers.conversation_from_chatgpt)
    monkeypatch.setattr(convert, "resolve_branches", legacy_readers.resolve_branches)


def _generated_file(tmp_path, copies: int = 25):
    conversations = _generated_chatgpt(copies)
    # edge values the checks by hand must read as pydantic did: bool sizes, odd times, drift
    odd = copy.deepcopy(conversations[0])
    odd["id"] = odd["conversation_id"] = "odd"
    odd["create_time"], odd["update_time"], odd["current_node"] = "2024-05-01T12:00:00+02:00", 1.7e12, None
    for i, node in enumerate(n for n in odd["mapping"].values() if n.get("message")):
        msg = node["message"]
        msg["create_time"] = [None, -5.0, 1.7e12, "2024-01-01T00:00:00", True, 3, "x", float("1e300")][i % 8]
        msg["metadata"] = {"attachments": [{"id": "f", "name": "n", "size": True, "mime_type": "image/png"}, "junk"], "model_slug": 5}
        msg["author"] = {"role": ["odd"] if i == 1 else "critic" if i == 2 else msg["author"]["role"], "name": 7}
        msg["surprise"] = i
    conversations.insert(5, odd)
    path = tmp_path / "conversations.json"
    path.write_bytes(json.dumps(conversations).encode())
    return path


def test_fast_construction_gives_the_tables_of_the_validated_conversion(tmp_path, monkeypatch):
    path = _generated_file(tmp_path)
    fast = _tables(path, tmp_path, True, monkeypatch)
    _reference_reader(monkeypatch)
    ref = _tables(path, tmp_path, False, monkeypatch)
    assert fast[0].num_rows == ref[0].num_rows > 25 * 3
    assert fast[0].equals(ref[0]) and fast[1].equals(ref[1])
    assert fast[2] == ref[2] and fast[3] == ref[3]


def test_fast_construction_gives_the_models_of_the_validated_conversion(tmp_path, monkeypatch):
    """Equal models, fields in the same order and marked set the same way (model_fields_set)."""
    path = _generated_file(tmp_path, copies=2)
    fast = list(read_path(path, ReadReport()))
    _reference_reader(monkeypatch)
    ref = list(read_path(path, ReadReport()))
    assert len(fast) == len(ref) > 6

    def shape(model):
        if isinstance(model, list):
            return [shape(m) for m in model]
        if hasattr(model, "model_fields_set"):
            return (type(model).__name__, sorted(model.model_fields_set), [(k, shape(v)) for k, v in model.__dict__.items()])
        return model

    for a, b in zip(fast, ref):
        assert a == b
        assert shape(a) == shape(b)
        assert a.model_dump_json() == b.model_dump_json()


def test_fast_constructor_refuses_what_pydantic_would_and_runs_the_validators():
    from datetime import datetime, timedelta, timezone

    from chatetl.model import Conversation, Message, Role, Source, ToolCall

    plus2 = datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    for when in (plus2, datetime(2024, 1, 1), None):
        kw = {"message_id": "m", "role": Role.USER, "created_at": when, "tool_calls": [ToolCall.fast(id="c")]}
        assert Message.fast(**kw) == Message(**kw) and Message.fast(**kw).model_fields_set == Message(**kw).model_fields_set
    conv = Conversation.fast(source=Source.CHATGPT, platform="chatgpt", conversation_id="c", updated_at=plus2)
    assert conv == Conversation(source=Source.CHATGPT, platform="chatgpt", conversation_id="c", updated_at=plus2)
    assert conv.updated_at.tzinfo is UTC
    a, b = Message.fast(message_id="a", role=Role.USER), Message.fast(message_id="b", role=Role.USER)
    assert a.tool_calls is not b.tool_calls and a.extra is not b.extra  # a new list and dict each
    with pytest.raises(TypeError, match="unknown"):
        Message.fast(message_id="a", role=Role.USER, bogus=1)
    with pytest.raises(TypeError, match="missing"):
        Message.fast(message_id="a")
    with pytest.raises(TypeError):
        Message.of_fields({"message_id": "a"}, ())


def _generated_claude(tmp_path, copies: int = 20):
    import zipfile

    with zipfile.ZipFile(io.BytesIO(claude_export())) as z:
        base = json.loads(z.read("conversations.json"))
    conversations = []
    for i in range(copies):
        for conv in base:
            conv = copy.deepcopy(conv)
            conv["uuid"] = f"{conv['uuid']}-{i}"
            conversations.append(conv)
    odd = copy.deepcopy(base[0])
    odd["uuid"], odd["created_at"], odd["updated_at"], odd["surprise"] = "odd", 1.7e12, "2024-05-01T12:00:00+02:00", [1]
    for j, msg in enumerate(odd["chat_messages"]):
        msg["created_at"] = [None, "2024-01-01T00:00:00", 5, "x"][j % 4]
        msg["sender"] = "critic" if j == 1 else msg.get("sender")
        msg.pop("parent_message_uuid", None)  # no parent pointers: array order
        msg["index"], msg["odd_field"] = j, {"k": j}
    conversations.insert(3, odd)
    conversations.insert(6, {"uuid": "no-messages", "chat_messages": 5})
    path = tmp_path / "conversations.json"
    path.write_bytes(json.dumps(conversations).encode())
    return path


def test_fast_claude_construction_gives_the_tables_and_models_of_the_validated_conversion(tmp_path, monkeypatch):
    import legacy_readers

    from chatetl.readers.platforms import claude_ai

    path = _generated_claude(tmp_path)
    fast = _tables(path, tmp_path, True, monkeypatch)
    fast_models = list(read_path(path, ReadReport()))
    monkeypatch.setattr(claude_ai, "conversation_from_claude_ai", legacy_readers.conversation_from_claude_ai)
    monkeypatch.setattr(convert, "resolve_branches", legacy_readers.resolve_branches)
    ref = _tables(path, tmp_path, False, monkeypatch)
    ref_models = list(read_path(path, ReadReport()))
    assert fast[0].num_rows == ref[0].num_rows > 20
    assert fast[0].equals(ref[0]) and fast[1].equals(ref[1])
    assert fast[2] == ref[2] and fast[3] == ref[3]
    assert any("no-messages" in where for _, where, _, _ in fast[2])
    for a, b in zip(fast_models, ref_models, strict=True):
        assert a == b and a.model_fields_set == b.model_fields_set
        assert [m.model_fields_set for m in a.messages] == [m.model_fields_set for m in b.messages]
        assert [list(m.__dict__) for m in a.messages] == [list(m.__dict__) for m in b.messages]


def test_a_long_record_is_decoded_and_handed_out_with_the_garbage_collector_paused(monkeypatch):
    """Records of BIG_VALUE bytes or more: the collector is off from their decode until the caller asks
    for the next record, and on again after, whether the caller reads on, stops early or the array breaks;
    shorter records, and a caller that had it off, are left alone. While the caller holds a long record,
    the splitter no longer holds its bytes, and its offset is still the record's."""
    import gc

    from chatetl.readers.jsonscan import decode, splitter
    from chatetl.readers.jsonscan.values import ValueSplitter

    for module in (decode, splitter):  # (the decode, and the hand-out; ValueSplitter hands out through ArraySplitter's _hand_out)
        monkeypatch.setattr(module, "BIG_VALUE", 1000)
    decoded_with: list[bool] = []
    real_loads = splitter.orjson.loads
    monkeypatch.setattr(splitter.orjson, "loads", lambda raw: (decoded_with.append(gc.isenabled()), real_loads(raw))[1])
    long, short = {"id": "long", "text": "x" * 2000}, {"id": "short", "text": "y"}
    data = json.dumps([short, long, short]).encode()
    assert gc.isenabled()
    seen = [(value["id"], gc.isenabled()) for _, value in ArraySplitter(io.BytesIO(data))]
    assert seen == [("short", True), ("long", False), ("short", True)] and gc.isenabled()
    assert decoded_with[1] is False and decoded_with[0] is True
    split = ArraySplitter(io.BytesIO(data), chunk=64)
    for _, value in split:  # a caller that stops at the long one
        if value["id"] == "long":
            assert not gc.isenabled()
            # its bytes no longer in the splitter's buffer, its place still told
            assert split.offset == data.index(b'{"id": "long"') and b"x" * 100 not in split.buf
            break
        assert split.offset == 1
    assert gc.isenabled()
    split = ArraySplitter(io.BytesIO(data), chunk=64)
    assert [(value["id"], split.offset) for _, value in split] == [
        ("short", 1), ("long", data.index(b'{"id": "long"')), ("short", data.rindex(b'{"id": "short"'))]
    with pytest.raises(SplitError):  # the array breaks after the long one
        for _ in ArraySplitter(io.BytesIO(data[:-30])):
            pass
    assert gc.isenabled()
    assert [gc.isenabled() for _ in ValueSplitter(io.BytesIO(json.dumps(long).encode()))] == [False] and gc.isenabled()
    gc.disable()
    try:
        assert [gc.isenabled() for _ in ArraySplitter(io.BytesIO(data))] == [False] * 3
        assert not gc.isenabled()  # (left as the caller had it)
    finally:
        gc.enable()


@pytest.mark.parametrize("first", [{"uuid": "u-1", "name": "x"}, {"title": "t", "create_time": 1.0}, {"mapping": {}}])
def test_possessive_openings_find_what_backtracking_ones_find(first):
    """The splitter's learned opening and its any-object opening match one way only (possessive quantifiers, for
    speed): on byte soup of their own pieces (whitespace, escapes, unclosed strings, look-alikes) they find the same
    places as the same patterns with backtracking quantifiers."""
    import random
    import re

    from chatetl.readers.jsonscan import splitter

    s = ArraySplitter(io.BytesIO(b"[]"))
    s._learn(first)
    pairs = [(s._cand, re.compile(s._cand.pattern.replace(b"*+", b"*"), re.DOTALL)),
             (splitter._ANY_NEXT_OBJECT, re.compile(splitter._ANY_NEXT_OBJECT.pattern.replace(b"*+", b"*")))]
    assert all(b"*+" in fast.pattern and b"*+" not in slow.pattern for fast, slow in pairs)
    rng = random.Random(11)
    ws = [b"", b" ", b"\n  ", b"\t", b" \r\n"]
    text = [b"a", b"\\\"", b"\\\\", b"\\", b'"', b"\xc3\xa9", b" ", b"}", b","]
    keys = [json.dumps(k).encode() for k in first] + [b'"text"', b'"id"']

    def opening() -> list[bytes]:  # a record's opening, as the file holds it: `}`, `,`, `{`, a key, a string, a key
        string = b'"' + b"".join(rng.choice(text) for _ in range(rng.randint(0, 6))) + b'"'
        parts = [b"}", b",", b"{", rng.choice(keys), b":", string, b",", rng.choice(keys), b":"]
        return [p + rng.choice(ws) for p in parts]

    pieces = [b"}", b",", b"{", b'"', b"\\", b":", b" ", b"]", *keys]
    found = [0, 0]
    for _ in range(3000):
        tokens = opening() + opening()
        for _ in range(rng.randint(0, 3)):  # mutated: a token dropped, doubled or replaced
            i = rng.randrange(len(tokens))
            tokens[i:i + 1] = rng.choice([[], [tokens[i], tokens[i]], [rng.choice(pieces)]])
        soup = b"".join(tokens)
        for i, (fast, slow) in enumerate(pairs):
            spans = [m.span() for m in fast.finditer(soup)]
            assert spans == [m.span() for m in slow.finditer(soup)], soup
            found[i] += len(spans)
    assert min(found) >= 100, found  # (the soup does hold places that open like records)
    record = json.dumps(first).encode()
    assert s._cand.search(b"}, " + record) is not None and s._cand.search(b"},\n  " + record.replace(b": ", b" :\t")) is not None


class _TokenByTokenSplitter(ArraySplitter):
    """The exact scanner as it was before the run-to-the-next-bracket regex (frozen from 82e018a): one
    Python step per token, a string or a bracket. Every record goes to it (no candidates)."""

    def _object_by_candidates(self):
        return None

    def _exact_end(self):
        import re

        from chatetl.readers.jsonscan.depthguard import NestingTooDeep
        from chatetl.readers.jsonscan.strings import ValueTooLong

        first = self._at(0)
        if first != b"{" and first != b"[":
            return super()._exact_end()  # (strings and scalars: unchanged)
        token = re.compile(rb'"[^"\\]{0,256}+"|[\[\]{}"]', re.DOTALL)
        depth = 0
        too_deep = None
        rel = 0
        while True:
            read = True
            for m in token.finditer(self.buf, self.start + rel):
                c = self.buf[m.start()]
                if c == 34:
                    quote = m.start() - self.start
                    if m.end() - m.start() == 1:
                        rel, closed = self._follow_string(quote, "file ends inside a record")
                        if not closed:
                            return self._skip_rest(rel, depth, True, ValueTooLong(self.max_value, self.offset + quote))
                        read = False
                        break
                    if m.end() - m.start() - 2 > self.max_value:
                        return self._skip_rest(m.end() - self.start, depth, False, ValueTooLong(self.max_value, self.offset + quote))
                    continue
                if c in (91, 123):
                    depth += 1
                    if depth >= MAX_JSON_DEPTH and too_deep is None:
                        too_deep = NestingTooDeep(MAX_JSON_DEPTH, self.consumed + m.start())
                else:
                    depth -= 1
                    if depth == 0:
                        return m.end() - self.start, too_deep
            else:
                rel = len(self.buf) - self.start
            if read and not self._more():
                raise SplitError("file ends inside a record")


class _ExactSplitter(ArraySplitter):
    """Today's exact scanner for every record (no candidates)."""

    def _object_by_candidates(self):
        return None


def _split_all(cls, data: bytes, chunk: int, max_value: int) -> list:
    split = cls(io.BytesIO(data), chunk=chunk, max_value=max_value)
    out: list = []
    try:
        for item in split:
            if isinstance(item, BadRecord):
                out.append(("bad", split.offset, item.reason, item.raw))
            else:
                out.append(("ok", split.offset, bytes(item[0]), item[1], dict(getattr(item, "found", {}))))
    except SplitError as exc:
        out.append(("error", str(exc)))
    return out


def test_exact_scanner_ends_records_where_the_token_by_token_scanner_did():
    """The exact scanner runs to the next bracket or long string in one regex match (for speed): on generated
    arrays (nesting past the depth limit, strings long, short, escaped, unicode, over a small cap, split across
    reads of any size, files cut short or damaged) it hands out the same records, bad records, places and
    errors as the scanner that stepped through every token."""
    import random

    rng = random.Random(5)
    texts = ["", "a", "é€😀", 'say "hi"', "back\\slash", "]}[{", "\n\t"]
    texts += ["z" * n for n in (4, 5, 6, 39, 40, 41, 254, 255, 256, 257, 299, 300, 301)]  # at each cap and past it

    def value(depth: int):
        roll = rng.random()
        if depth > 4 or roll < 0.3:
            return rng.choice([rng.choice(texts), rng.randint(-5, 10**6), 1.5, True, None])
        if roll < 0.65:
            return {rng.choice(["a", "text", "}", "k\"q"]) + str(i): value(depth + 1) for i in range(rng.randint(0, 4))}
        return [value(depth + 1) for _ in range(rng.randint(0, 4))]

    def record() -> bytes:
        roll = rng.random()
        if roll < 0.05:  # past the depth limit
            n = rng.choice([MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH - 1, 600])
            return b'{"d": ' + b"[" * n + b"]" * n + b"}"
        return json.dumps(value(0) if roll < 0.2 else {"id": rng.random(), "v": value(1)}, ensure_ascii=rng.random() < 0.5).encode()

    cases = 0
    for _ in range(300):
        data = b"[" + b", ".join(record() for _ in range(rng.randint(1, 6))) + b"]"
        roll = rng.random()
        if roll < 0.15:
            data = data[:rng.randrange(1, len(data))]  # cut short
        elif roll < 0.3:
            i = rng.randrange(1, len(data))
            data = data[:i] + rng.choice([b'"', b"\\", b"{", b"]", b"x"]) + data[i:]  # damaged
        chunk = rng.choice([1, 3, 17, 256, 4096])
        max_value = rng.choice([5, 40, 255, 256, 300, 1 << 20])
        got = _split_all(_ExactSplitter, data, chunk, max_value)
        assert got == _split_all(_TokenByTokenSplitter, data, chunk, max_value), (data, chunk, max_value)
        cases += len(got)
    assert cases > 500
