"""The normalize fast path (arrays cut by chatetl.readers.jsonscan.splitter and decoded by orjson, the
columnar TableWriter) writes the tables the reference path wrote (ijson behind the DepthGuard, rows
through Table.from_pylist), row order included, and reports the same errors in the same places; past
the reference, it reads on after a record nested too deep or not decodable. The reference path's
outputs are recorded in tests/readers/golden/ (tests/readers_golden.py), as are the models and tables
of the pydantic-validated conversion the fast construction replaced: today's fast path wrote them, and
they equalled the reference's when they were written."""

from __future__ import annotations

import io
import json
from datetime import UTC

import pytest
import readers_golden
from readers_golden import over_deep

from chatetl.readers import ReadReport, read_path
from chatetl.readers.jsonscan.depthguard import MAX_JSON_DEPTH
from chatetl.readers.jsonscan.splitter import ArraySplitter, BadRecord, SplitError
from chatetl.samples import chatgpt_conversations


def _same(path, tmp_path, case):
    """The fast path gives the tables, errors and summary the reference path gave (recorded: `case`)."""
    fast = readers_golden.read_tables(path, tmp_path / f"fast-{case.replace(' ', '-')}")
    ref = readers_golden.stored(case)["tables"]
    got = readers_golden.tables_record(fast, tmp_path)
    assert fast[0].num_rows and fast[1].num_rows
    assert got["conversations"] == ref["conversations"] and got["messages"] == ref["messages"]
    assert got["errors"] == ref["errors"]
    assert got["summary"] == ref["summary"]
    return fast


@pytest.mark.parametrize(("indent", "case"), [(None, "chatgpt ending too deep"), (1, "chatgpt ending too deep, indented")])
def test_generated_chatgpt_file_gives_the_reference_tables(tmp_path, indent, case):
    # the over-deep record last: the reference path stopped reading there
    path = readers_golden.chatgpt_ending_too_deep(tmp_path, indent)
    convs, _, errors, _ = _same(path, tmp_path, case)
    assert convs.num_rows == 25 * 3 + 2  # the broken tree and the numbers read; no mapping, a list and the deep one not
    wheres = [(where, reason.split(":")[0]) for _, where, reason, _ in errors]
    assert ("record 7 (conversation bad-1)", "ValueError") in wheres and ("record 30", "ValueError") in wheres
    assert any(where.startswith("record 20") and "damaged message tree" in reason for _, where, reason, _ in errors)
    assert errors[-1][1] == f"record {25 * 3 + 4}" and f"more than {MAX_JSON_DEPTH} levels" in errors[-1][2]


def test_sharded_chatgpt_zip_and_claude_export_give_the_reference_tables(tmp_path):
    for name, case in (("chatgpt.zip", "sample chatgpt zip"), ("claude.zip", "sample claude zip")):
        path = readers_golden.sample_zip(tmp_path, name)
        _same(path, tmp_path, case)


def test_truncated_file_is_reported_like_the_reference(tmp_path):
    path = readers_golden.cut_short(tmp_path)
    fast = readers_golden.read_tables(path, tmp_path / "fast")
    ref = readers_golden.stored("cut short")["tables"]
    got = readers_golden.tables_record(fast, tmp_path)
    assert got["conversations"] == ref["conversations"] and got["messages"] == ref["messages"]
    assert [(f, w) for f, w, _, _ in got["errors"]] == [(f, w) for f, w, _, _ in ref["errors"]]
    assert "invalid or truncated JSON" in fast[2][-1][2]


def test_fast_path_reads_on_past_a_record_too_deep_or_not_decodable(tmp_path):
    good = [json.dumps(c).encode() for c in chatgpt_conversations()]
    # (an integer past 64 bits, which stops ijson, reads too)
    good[2] = good[2][:-1] + b', "big": ' + str(2**70).encode() + b"}"
    data = b"[" + b",".join([good[0], over_deep(), good[1], b'{"title": "x", "id": tru}', good[2]]) + b"]"
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
# pydantic-validated conversion as it was (commit afdc011): its tables and models are recorded ----


def test_fast_construction_gives_the_tables_of_the_validated_conversion(tmp_path):
    path = readers_golden.odd_chatgpt(tmp_path)
    fast = readers_golden.read_tables(path, tmp_path / "fast")
    ref = readers_golden.stored("odd chatgpt")["tables"]
    got = readers_golden.tables_record(fast, tmp_path)
    assert fast[0].num_rows == len(ref["conversations"]["rows"]) > 25 * 3
    assert got["conversations"] == ref["conversations"] and got["messages"] == ref["messages"]
    assert got["errors"] == ref["errors"] and got["summary"] == ref["summary"]


def test_fast_construction_gives_the_models_of_the_validated_conversion(tmp_path):
    """Equal models, fields in the same order and marked set the same way (model_fields_set), the same JSON."""
    path = readers_golden.odd_chatgpt(tmp_path, copies=2)
    fast = list(read_path(path, ReadReport()))
    ref = readers_golden.stored("odd chatgpt, 2 copies")["models"]
    assert len(fast) == len(ref) > 6
    for got, want in zip(readers_golden.models_record(fast, tmp_path), ref, strict=True):
        assert got["model"] == want["model"]  # (class, fields set, every value in order, nested models too: `==` and more)
        assert got["json"] == want["json"]


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


def test_fast_claude_construction_gives_the_tables_and_models_of_the_validated_conversion(tmp_path):
    path = readers_golden.odd_claude(tmp_path)
    fast = readers_golden.read_tables(path, tmp_path / "fast")
    fast_models = list(read_path(path, ReadReport()))
    want = readers_golden.stored("odd claude")
    ref = want["tables"]
    got = readers_golden.tables_record(fast, tmp_path)
    assert fast[0].num_rows == len(ref["conversations"]["rows"]) > 20
    assert got["conversations"] == ref["conversations"] and got["messages"] == ref["messages"]
    assert got["errors"] == ref["errors"] and got["summary"] == ref["summary"]
    assert any("no-messages" in where for _, where, _, _ in fast[2])
    # equal models, fields marked set the same way, the messages' fields in the same order
    assert [m["model"] for m in readers_golden.models_record(fast_models, tmp_path)] == [m["model"] for m in want["models"]]


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
