"""A local array file read in pieces by byte range (chatetl.normalize.pieces) on two processes gives the
one-process tables (Table.equals) and report (errors in their places, counted over the whole file,
with their bytes), wherever the pieces' planned starts land: on records, on objects nested inside
one (the piece before reads on to the end), past a break in the array, in trailing data. The pieces
go to the output folders as parts (the command line) or through Arrow IPC (one file per table),
and leave no file behind."""

from __future__ import annotations

import copy
import json
import os
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from reader_inputs import chatgpt_record, zip_bytes

from chatetl.ingest.upload import normalize_upload
from chatetl.normalize import Tuning, normalize_into, pieces, work
from chatetl.normalize import stream as stream_module
from chatetl.normalize.pool import Pool
from chatetl.readers import ReadReport, read_path
from chatetl.readers.entry import Entry
from chatetl.readers.jsonscan.splitter import ArraySplitter
from chatetl.samples import chatgpt_conversations
from chatetl.tables import PartsWriter, TableWriter

MAX_VALUE = 64 * 1024**2


SMALL = Tuning(piece_bytes=4000, wait_for_workers=True)  # the worker takes pieces from the first


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # the IPC files' folder, checked empty after
    (tmp_path / "tmp").mkdir()


def _chats(copies: int, nested_look_alikes: bool = False) -> list[dict]:
    out = []
    for i in range(copies):
        for conv in chatgpt_conversations():
            conv = copy.deepcopy(conv)
            conv["id"] = conv["conversation_id"] = f"{conv['conversation_id']}-{i}"
            if nested_look_alikes:  # objects inside the record that open like a record: `}, {"title": "..", "create_time":`
                conv["gizmo_notes"] = [{"title": f"n{j}", "create_time": j, "pad": "x" * 900} for j in range(8)]
            out.append(conv)
    return out


def _one_process(path, out) -> tuple:
    report = ReadReport()
    with TableWriter(out / "c1.parquet", out / "m1.parquet", batch_bytes=20_000) as writer:
        for conv in read_path(path, report):
            writer.add(conv)
    return (pq.read_table(out / "c1.parquet"), pq.read_table(out / "m1.parquet"),
            [(e.file, e.where, e.reason, e.raw) for e in report.errors], report.summary())


def _in_pieces(path, out, parts: bool) -> tuple:
    report = ReadReport()
    if parts:
        (out / "c").mkdir(exist_ok=True)
        (out / "m").mkdir(exist_ok=True)
        writer: TableWriter = PartsWriter(out / "c", out / "m", batch_bytes=20_000)
    else:
        writer = TableWriter(out / "c2.parquet", out / "m2.parquet", batch_bytes=20_000)
    with writer:
        shares = normalize_into(writer, [path], report, 2, tuning=SMALL)
    if parts:
        assert not list((out / "c").glob(".*")) and not list((out / "m").glob(".*"))  # every piece renamed or removed
        read = [pa.concat_tables([pq.read_table(p) for p in sorted((out / t).glob("part-*.parquet"))]) for t in ("c", "m")]
    else:
        read = [pq.read_table(out / "c2.parquet"), pq.read_table(out / "m2.parquet")]
    assert [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("chatetl-")] == []  # the IPC files' folder removed
    errors = [(e.file, e.where, e.reason, e.raw) for e in report.errors]
    assert (writer.conversations, writer.messages) == (report.conversations, report.messages)
    return (*read, errors, report.summary(), shares)


def _same(path, out, parts: bool = False):
    one = _one_process(path, out)
    two = _in_pieces(path, out, parts)
    assert one[0].num_rows and one[1].num_rows
    assert two[0].equals(one[0]) and two[1].equals(one[1])
    assert two[2:4] == one[2:4]
    return one, two[4]


@pytest.mark.parametrize("parts", [False, True], ids=["ipc", "parts"])
def test_pieces_give_the_one_process_tables_and_report(tmp_path, parts):
    path = tmp_path / "conversations.json"
    records = _chats(20)
    assert len(records) > 45
    records.insert(7, {"title": "no mapping", "id": "bad-1"})  # a record the reader refuses, in a later piece
    records.insert(40, [1, 2, 3])
    body = json.dumps(records).encode()
    path.write_bytes(body[:-1] + b', {"title": "x", "id": tru}, ' + json.dumps(records[0] | {"id": "last", "conversation_id": "last"}).encode() + b"]")
    (convs, _, errors, summary), shares = _same(path, tmp_path, parts)
    assert shares.ranges >= 6 and shares.workers >= 2 and shares.here >= 1 and shares.misfits == 0
    wheres = [w for _, w, _, _ in errors]
    assert wheres[:2] == ["record 7 (conversation bad-1)", "record 40"]
    assert wheres[2] == f"record {len(records)}" and errors[2][3] == b'{"title": "x", "id": tru}'  # its bytes kept
    assert convs.column("conversation_id").to_pylist()[-1] == "last" and summary["conversations"] == len(records) - 1  # (of len + 2: two refused)


def test_a_piece_started_inside_a_record_is_not_used(tmp_path):
    """Planned starts on objects nested in a record: the piece before reads on to the end."""
    path = tmp_path / "conversations.json"
    path.write_bytes(json.dumps(_chats(6, nested_look_alikes=True)).encode())
    starts = pieces.plan(path, path.stat().st_size, MAX_VALUE, SMALL.piece_bytes).starts
    records = _record_starts(path)
    assert any(s not in records for s in starts)  # (the test's premise: some start is a look-alike)
    _, shares = _same(path, tmp_path, parts=True)
    assert shares.misfits >= 1


def test_starts_fall_on_records(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_bytes(json.dumps(_chats(10), indent=2).encode())
    starts = pieces.plan(path, path.stat().st_size, MAX_VALUE, SMALL.piece_bytes).starts
    assert len(starts) >= 5 and starts == sorted(set(starts))
    assert set(starts) <= set(_record_starts(path))
    assert pieces.plan(path, path.stat().st_size, MAX_VALUE, piece_bytes=path.stat().st_size).starts == []  # one piece


@pytest.mark.parametrize("damage", ["cut short", "garbage after a record", "trailing data", "not records"])
def test_a_break_in_the_array_drops_the_pieces_after_it(tmp_path, damage):
    body = json.dumps(_chats(10)).encode()
    middle = body.index(b', {"title"', len(body) // 2)
    if damage == "cut short":
        body = body[: len(body) * 2 // 3]
    elif damage == "garbage after a record":  # the array breaks; the records after the break look whole
        body = body[:middle] + b" oops" + body[middle:]
    elif damage == "trailing data":  # a second array after the first: its records open like the first's
        body = body + b"\n" + body
    else:  # the first record is no object: no opening to look for, no pieces (the file is cut as a stream)
        body = json.dumps([[1, 2], *_chats(10)]).encode()
    path = tmp_path / "conversations.json"
    path.write_bytes(body)
    if damage != "not records":
        (_, _, errors, _), _ = _same(path, tmp_path)
        assert "invalid or truncated JSON" in errors[-1][2]
    else:
        assert pieces.plan(path, path.stat().st_size, MAX_VALUE, SMALL.piece_bytes).starts == []


def test_shift_place():
    assert work.shift_place("record 3 (conversation x) message 2", 10) == "record 13 (conversation x) message 2"
    assert work.shift_place("after record -1", 10) == "after record 9"
    assert work.shift_place("record 3", 0) == "record 3"


def test_adopted_parts_follow_the_writers_own(tmp_path):
    """PartsWriter.adopt: parts written elsewhere take the next part numbers, between the writer's own."""
    from chatetl.readers.platforms.chatgpt import conversation_from_chatgpt
    from chatetl.readers.tree import resolve_branches
    from chatetl.tables import CONVERSATIONS_SCHEMA, MESSAGES_SCHEMA, TableBatch

    chats = []
    for raw in _chats(2):
        conv = conversation_from_chatgpt(raw, ReadReport())
        resolve_branches(conv)
        chats.append(conv)
    (tmp_path / "c").mkdir()
    (tmp_path / "m").mkdir()
    writer = PartsWriter(tmp_path / "c", tmp_path / "m")
    writer.add(chats[0])
    beside = writer.spare_paths("piece-1")
    with TableWriter(*beside) as other:
        other.add(chats[1])
        other.add(chats[2])
    writer.adopt(*beside, 2, len(chats[1].messages) + len(chats[2].messages))
    writer.add(chats[3])
    writer.close()
    names = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert names == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    batch = TableBatch()
    for conv in chats[:4]:
        batch.add(conv)
    want_c, want_m = batch.tables()
    got_c = pa.concat_tables([pq.read_table(tmp_path / "c" / n) for n in names])
    got_m = pa.concat_tables([pq.read_table(tmp_path / "m" / n) for n in names])
    assert got_c.cast(CONVERSATIONS_SCHEMA).equals(want_c.cast(CONVERSATIONS_SCHEMA))
    assert got_m.cast(MESSAGES_SCHEMA).equals(want_m.cast(MESSAGES_SCHEMA))
    assert (writer.conversations, writer.messages) == (4, got_m.num_rows)


def _record_starts(path) -> list[int]:
    with open(path, "rb") as f:
        splitter = ArraySplitter(f)
        return [splitter.offset for _ in splitter]


# ---- zip members read whole, as pieces, by the process that is free ----


def _shard(i: int) -> bytes:
    records = [chatgpt_record(f"s{i}-{j}", f"shard {i} chat {j} " + "words " * 200) for j in range(30)]
    records.insert(3, {"title": "no mapping", "id": f"bad-{i}"})  # an error in each shard, in its place
    return json.dumps(records).encode()


def _read_both(path, tmp_path) -> tuple:
    one = _one_process(path, tmp_path)
    two = _in_pieces(path, tmp_path, parts=True)
    assert two[0].equals(one[0]) and two[1].equals(one[1])
    assert two[2:4] == one[2:4]
    return one, two[4]


def test_members_of_a_sharded_zip_are_read_as_pieces(tmp_path):
    """Each shard read whole by whichever process is free; errors found between them while they are
    read (a member that is no readable zip) stay between their errors, as in one process; a damaged
    member ends where it broke, reported in its place."""
    members = {f"conversations-{i:03d}.json": _shard(i) for i in range(6)}
    members["conversations-002b.zip"] = b"PK\x03\x04 not a zip"
    damaged = json.dumps([chatgpt_record("c-bad", "x" * 300_000), chatgpt_record("c-after")]).encode()
    members["conversations-004b.json"] = damaged  # (longer than the head detection reads)
    data = bytearray(zip_bytes(members))
    i = data.find(b"x" * 300_000) + 150_000
    data[i] = ord("y")  # a bad CRC: found once the member is read to its end
    path = tmp_path / "export.zip"
    path.write_bytes(bytes(data))
    (_, _, errors, summary), shares = _read_both(path, tmp_path)
    assert shares.ranges == 7 and shares.workers >= 2 and shares.here >= 1
    wheres = [(file.rsplit("!", 1)[-1], where) for file, where, _, _ in errors]
    assert wheres.index(("conversations-002b.zip", "")) == 3  # after shards 0-2's errors, before shard 3's
    assert any(file == "conversations-004b.json" and where.startswith("after ") for file, where in wheres)
    assert any("damaged zip member" in reason for _, _, reason, _ in errors)
    assert summary["conversations"] == 6 * 30  # (the damaged member broke on its first read, as in one process)


def test_members_over_the_inflate_cap_stay_in_this_process(tmp_path, monkeypatch):
    """What the zip declares past CHATETL_MAX_INFLATED_BYTES: its members are read here, counted, and
    reading stops at the cap with the one-process error."""
    members = {f"conversations-{i:03d}.json": _shard(i) for i in range(4)}
    path = tmp_path / "export.zip"
    path.write_bytes(zip_bytes(members))
    monkeypatch.setenv("CHATETL_MAX_INFLATED_BYTES", str(sum(len(d) for d in members.values()) * 2 // 3))
    (_, _, errors, _), shares = _read_both(path, tmp_path)
    assert shares.ranges == 0
    assert "inflated past" in errors[-1][2]


def test_a_members_inflated_bytes_count_against_the_cap(tmp_path):
    """A member read as a piece counts what it inflated, as the readers' reading of it does."""
    from chatetl.readers import limits
    from chatetl.readers.inputs.archive import Inflated

    members = {f"conversations-{i:03d}.json": _shard(i) for i in range(3)}
    path = tmp_path / "export.zip"
    path.write_bytes(zip_bytes(members))
    seen = {}
    original = Inflated.member

    def member(self, *args):
        seen["inflated"] = self
        return original(self, *args)

    report = ReadReport()
    try:
        Inflated.member = member
        with TableWriter(tmp_path / "c.parquet", tmp_path / "m.parquet") as writer:
            shares = normalize_into(writer, [Entry.from_path(path)], report, 2, tuning=SMALL)
    finally:
        Inflated.member = original
    assert shares.ranges == 3 and len(report.errors) == 3  # (each shard's bad record)
    assert seen["inflated"].read == sum(len(d) for d in members.values())
    assert limits.current().max_inflated_bytes > seen["inflated"].read


def test_an_upload_from_s3_on_two_cores_streams_an_array_and_copies_a_zip(s3_store, tmp_path, monkeypatch):
    """The normalize step of an upload on the real S3 server: on two cores an array file is read from
    the stream (its records cut here, converted on both), a zip is copied to the step's folder and its
    members read whole on both (chatetl.normalize.sources); the same tables and quarantine as one process."""
    from chatetl.normalize import sources

    used = _spied(monkeypatch)
    records = _chats(20)
    records.insert(9, {"title": "no mapping", "id": "bad-1"})
    s3_store.put_bytes("raw/a/conversations.json", json.dumps(records).encode())
    s3_store.put_bytes("raw/b/export.zip", zip_bytes({f"conversations-{i:03d}.json": _shard(i) for i in range(3)}))
    monkeypatch.setattr(sources, "COPY_MIN_BYTES", 1)  # (the zip is copied however small)
    for key in ("raw/a/conversations.json", "raw/b/export.zip"):
        info = s3_store.head(key)
        one = normalize_upload(s3_store, info, "2026-03-01", workdir=tmp_path, workers=1)
        written = {k: s3_store.get_bytes(k) for k in one.written + one.unchanged + one.quarantined}
        for k in one.written:
            s3_store.delete(k)
        two = normalize_upload(s3_store, info, "2026-03-01", workdir=tmp_path, workers=2)
        assert [str(e) for e in two.report.errors] == [str(e) for e in one.report.errors] and one.report.errors
        for k, data in written.items():
            if k.endswith(".parquet"):
                assert pq.read_table(pa.BufferReader(s3_store.get_bytes(k))).equals(pq.read_table(pa.BufferReader(data)))
            else:
                assert s3_store.get_bytes(k) == data
    assert [how for how, _ in used] == ["read_stream"] + ["read_whole"] * 3
    assert list(tmp_path.iterdir()) == [tmp_path / "tmp"]  # (the copy went with the step's folder)


def test_the_command_line_reads_s3_inputs_on_two_cores_as_one_process_does(s3_store, tmp_path, monkeypatch):
    """`chatetl normalize s3://...` on the real S3 server: by default on two cores once the listed objects reach
    AUTO_MIN_BYTES; a zip of COPY_MIN_BYTES or more is copied first and its members read whole on both processes,
    an array file is read from the stream, a small zip is read as it was; the tables, the summary and the errors are
    the one process's, in the same order, and no copy is left behind."""
    from click.testing import CliRunner

    from chatetl.cli import main
    from chatetl.normalize import processes, sources

    monkeypatch.setattr(processes, "AUTO_MIN_BYTES", 10_000)
    records = _chats(20)
    records.insert(9, {"title": "no mapping", "id": "bad-1"})
    s3_store.put_bytes("in/a/conversations.json", json.dumps(records).encode())
    s3_store.put_bytes("in/b/export.zip", zip_bytes({f"conversations-{i:03d}.json": _shard(i) for i in range(3)}))
    s3_store.put_bytes("in/c/small.zip", zip_bytes({"conversations.json": json.dumps(_chats(1)).encode()}))
    monkeypatch.setattr(sources, "COPY_MIN_BYTES", s3_store.head("in/c/small.zip").size + 1)
    assert s3_store.head("in/b/export.zip").size >= sources.COPY_MIN_BYTES
    used = _spied(monkeypatch)
    uri = f"s3://{s3_store.bucket}/in/"
    results = {}
    for n in ("1", None):
        args = ["normalize", uri, "--out", str(tmp_path / f"out-{n}")] + (["--workers", n] if n else [])
        results[n] = CliRunner().invoke(main, args)
        assert results[n].exit_code == 1, results[n].output  # (the record without a mapping)
    assert results[None].output == results["1"].output and '"errors": 4' in results["1"].output  # (one per shard, one in the array)
    for table in ("conversations", "messages"):
        one, two = (pq.read_table(tmp_path / f"out-{n}" / table) for n in ("1", None))
        assert two.num_rows and two.equals(one)
    zipped = f"s3://{s3_store.bucket}/in/b/export.zip!conversations-"
    assert [(how, name[:len(zipped)] if name.startswith(zipped) else name) for how, name in used] == [("read_stream", f"s3://{s3_store.bucket}/in/a/conversations.json")] + [
        ("read_whole", zipped)] * 3 + [("read_stream", f"s3://{s3_store.bucket}/in/c/small.zip!conversations.json")]
    assert list((tmp_path / "tmp").iterdir()) == []  # the copy and its folder are gone


def test_a_folder_of_small_files_is_read_a_file_a_piece(tmp_path):
    """Files too small to cut are pieces whole: a folder of them is read on both processes."""
    (tmp_path / "in").mkdir()
    for i in range(5):
        records = [chatgpt_record(f"f{i}-{j}") for j in range(3)] + [{"title": "no mapping", "id": f"bad-{i}"}]
        (tmp_path / "in" / f"conversations-{i}.json").write_text(json.dumps(records))
    assert max(p.stat().st_size for p in (tmp_path / "in").iterdir()) < 2 * SMALL.piece_bytes
    (_, _, errors, _), shares = _read_both(tmp_path / "in", tmp_path)
    assert shares.ranges == 5 and shares.workers >= 1 and len(errors) == 5


def test_the_one_big_member_of_a_zip_is_cut_here(tmp_path):
    """A ChatGPT export before 2026, one conversations.json beside small files: its member is most of
    the zip's JSON (Tuning.member_share), so it is cut as a stream here (a deflated member cannot be cut in pieces)."""
    import zipfile

    members = {"conversations.json": _shard(0) + b" " * 1000, "user.json": b'{"id": "u"}', "message_feedback.json": b"[]"}
    path = tmp_path / "export.zip"
    path.write_bytes(zip_bytes(members, zipfile.ZIP_DEFLATED))
    (_, _, errors, _), shares = _read_both(path, tmp_path)
    assert shares.ranges == 0 and shares.workers >= 1 and len(errors) == 1


def _spied(monkeypatch) -> list[tuple[str, str]]:
    """How each array file is read (a stream cut here, byte ranges, a piece whole), with its name, as it is read."""
    used: list[tuple[str, str]] = []
    read_stream = stream_module.read_stream
    monkeypatch.setattr("chatetl.normalize.door.read_stream",
                        lambda pool, entry, fmt: (used.append(("read_stream", entry.name)), read_stream(pool, entry, fmt))[1])
    for name in ("read_ranges", "read_whole"):
        original = getattr(Pool, name)
        monkeypatch.setattr(Pool, name, lambda self, entry, *a, _o=original, _n=name: (used.append((_n, entry.name)), _o(self, entry, *a))[1])
    return used
