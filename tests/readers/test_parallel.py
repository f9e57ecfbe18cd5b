"""Normalize on worker processes (chatetl.normalize) writes the one-process path's tables
(Table.equals, row order included) and leaves the same report (errors with their places and bad
bytes, drift, skips, counts), whatever the files hold: branches, tools, damaged records, a record
nested too deep, a file cut short, sharded zips, a damaged zip member, other formats between."""

from __future__ import annotations

import copy
import io
import json
import zipfile
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from reader_inputs import damaged_zip, member_data_start, zip_bytes

from chatetl.ingest.upload import normalize_upload
from chatetl.normalize import Tuning, normalize_into, processes, work
from chatetl.normalize.pool import Pool
from chatetl.readers import ReadReport, read_path
from chatetl.readers.jsonscan.depthguard import MAX_JSON_DEPTH
from chatetl.samples import (
    ai_studio,
    chatgpt_conversations,
    chatgpt_export,
    claude_export,
    le_chat,
)
from chatetl.storage import LocalObjectStore
from chatetl.tables import TableWriter


def _generated(copies: int = 12) -> bytes:
    """The sample chats (branches, tools, reasoning, citations, hidden context) under new ids, a few
    damaged records among them, a field no reader knows (drift), and a record nested too deep last."""
    out = []
    for i in range(copies):
        for conv in chatgpt_conversations():
            conv = copy.deepcopy(conv)
            conv["id"] = conv["conversation_id"] = f"{conv['conversation_id']}-{i}"
            conv["unknown_field"] = {"kept": [i]}
            if i % 3 == 1:  # a record boundary's look-alike: objects inside the record that open like one
                conv["unknown_field"]["items"] = [{"title": "a", "create_time": 1}, {"title": "b", "create_time": 2}]
                node = next(n for n in conv["mapping"].values() if n.get("message") and n["message"]["content"].get("parts"))
                node["message"]["content"]["parts"].append('in a string: }, {"title": "no", "mapping": {}} ] and \\" }, {')
            out.append(conv)
    out.insert(5, {"title": "no mapping", "id": "bad-1"})
    broken = copy.deepcopy(out[3])
    broken["id"] = broken["conversation_id"] = "broken-tree"
    ids = [k for k, n in broken["mapping"].items() if n.get("message")]
    broken["mapping"][ids[1]]["parent"] = "nowhere"  # read whole (a root): a warning
    broken["mapping"][ids[2]]["parent"] = ids[3]  # a cycle: damage, an error
    broken["mapping"][ids[3]]["parent"] = ids[2]
    out.insert(14, broken)
    out.insert(20, [1, 2, 3])
    body = json.dumps(out).encode()
    bad = b'{"title": "x", "id": tru}'
    deep = b'{"title": "deep", "id": "deep", "mapping": {}, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    return body[:-1] + b", " + bad + b", " + deep + b", " + json.dumps(out[0] | {"id": "last", "conversation_id": "last"}).encode() + b"]"


def _claude_with_look_alikes() -> bytes:
    import io
    import zipfile

    from chatetl.samples import claude_export

    convs = json.loads(zipfile.ZipFile(io.BytesIO(claude_export())).read("conversations.json"))
    out = []
    for i in range(6):
        for conv in convs:
            conv = copy.deepcopy(conv)
            conv["uuid"] = f"{conv['uuid']}-{i}"
            conv["name"] = f'}}, {{"uuid": "u{i}", "name": "look-alike"}}, {{"uuid": "v", "name": 1'
            conv["linked"] = [{"uuid": f"a{i}", "name": "x"}, {"uuid": f"b{i}", "name": "y"}]  # a structural one
            out.append(conv)
    out.insert(3, {"uuid": "c-bad", "chat_messages": "not a list"})
    return json.dumps(out, indent=1).encode()


def _one_process(path, out) -> tuple:
    report = ReadReport()
    with TableWriter(out / "c1.parquet", out / "m1.parquet", batch_bytes=50_000) as writer:
        for conv in read_path(path, report):
            writer.add(conv)
    return _result(out, "1", report, writer)


def _workers(path, out, tuning: Tuning, workers: int = 2) -> tuple:
    report = ReadReport()
    with TableWriter(out / "c2.parquet", out / "m2.parquet", batch_bytes=50_000) as writer:
        shares = normalize_into(writer, [path], report, workers, tuning=tuning)
    assert shares.workers > 0  # (and this process, when the workers have enough)
    assert shares.ranges > 0 if tuning.ranges else shares.ranges == 0  # (the mode fixture's choice was taken)
    return _result(out, "2", report, writer)


def _result(out, n, report, writer) -> tuple:
    errors = [(e.file, e.where, e.reason, e.raw) for e in report.errors]
    warnings = [(e.file, e.where, e.reason, e.raw) for e in report.warnings]
    counts = (writer.conversations, writer.messages, report.raw_bytes, report.raw_dropped, warnings)
    return pq.read_table(out / f"c{n}.parquet"), pq.read_table(out / f"m{n}.parquet"), errors, report.summary(), counts


def _same(path, out, tuning: Tuning):
    one, two = _one_process(path, out), _workers(path, out, tuning)
    assert one[0].num_rows and one[1].num_rows
    assert two[0].equals(one[0]) and two[1].equals(one[1])
    assert two[2:] == one[2:]
    return two


# many pieces per file, so their order is what is tested; the workers take part from the first
SMALL = Tuning(records_bytes=4000, wait_for_workers=True, ranges=False)


@pytest.fixture(params=["stream", "pieces"])
def mode(request) -> Tuning:
    """Both ways a local array file is read on two cores: cut here into pieces of records (`stream`, as
    the one big member of a zip or an s3:// input always is), or in byte ranges of a few KB (a zip's
    several members whole; chatetl.normalize.pieces)."""
    if request.param == "pieces":
        return replace(SMALL, ranges=True, piece_bytes=3000)
    return SMALL


def test_generated_file_gives_the_one_process_tables_and_report(tmp_path, mode):
    path = tmp_path / "conversations.json"
    path.write_bytes(_generated())
    convs, msgs, errors, summary, _ = _same(path, tmp_path, mode)
    report = ReadReport()
    with TableWriter(tmp_path / "c3.parquet", tmp_path / "m3.parquet") as writer:
        shares = normalize_into(writer, [path], report, 2, tuning=mode)
    assert shares.workers and shares.here  # both processes converted pieces
    # stream: the look-alikes cut records short, read on from them; pieces: a piece started at one
    # (an object nested in a record), the piece before it read on to the end
    assert shares.misfits >= (1 if mode.ranges else 4)
    assert pq.read_table(tmp_path / "m3.parquet").equals(msgs)
    wheres = [where for _, where, _, _ in errors]
    assert "record 5 (conversation bad-1)" in wheres and "record 20" in wheres
    assert any(w.startswith("record 14") and "damaged message tree" in r for _, w, r, _ in errors)
    n = 12 * 3 + 3
    bad, deep = errors[-2], errors[-1]
    assert bad[1] == f"record {n}" and "invalid JSON" in bad[2] and bad[3] == b'{"title": "x", "id": tru}'
    assert deep[1] == f"record {n + 1}" and f"more than {MAX_JSON_DEPTH} levels" in deep[2]
    assert convs.column("conversation_id").to_pylist()[-1] == "last"  # read on past both
    assert summary["drift"]


def test_sharded_zip_claude_export_and_a_folder_of_mixed_formats(tmp_path, mode):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "chatgpt.zip").write_bytes(chatgpt_export(shards=3))
    (tmp_path / "in" / "claude.zip").write_bytes(claude_export())
    (tmp_path / "in" / "damaged.zip").write_bytes(damaged_zip())
    (tmp_path / "in" / "dataset.jsonl").write_text(
        json.dumps({"id": "d1", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}) + "\n"
    )
    (tmp_path / "in" / "z.json").write_bytes(_generated(2))
    convs, _, errors, _, _ = _same(tmp_path / "in", tmp_path, mode)
    assert set(convs.column("source").to_pylist()) == {"chatgpt", "claude-ai", "sharegpt"}
    assert any("damaged zip member" in reason for _, _, reason, _ in errors)


@pytest.mark.parametrize("stored", [True, False])
def test_damaged_member_longer_than_a_read_keeps_what_one_process_keeps(tmp_path, mode, stored):
    """A member with a bad CRC (found at its end) or cut short, several reads long, an odd record early
    in it (a misfit: the stream path reads on from it): the records whole before the block that met the damage
    are kept, the same ones on both paths (the stream path kept 5 of one process's 529 before: it read
    on past a misfit in other sizes, and zipfile drops the bytes of the read that meets the damage)."""
    import struct
    import zipfile

    from reader_inputs import zip_bytes

    from chatetl.readers.inputs import member_stream

    records = []
    for i in range(round(2.2 * member_stream.BLOCK / 12_000)):  # (about 2.2 blocks; the workers read with the real BLOCK)
        for conv in chatgpt_conversations():
            conv = copy.deepcopy(conv)
            conv["id"] = conv["conversation_id"] = f"{conv['conversation_id']}-{i}"
            records.append(conv)
    records.insert(5, {"title": "no mapping", "id": "odd-1"})
    # two shards: each read whole as a piece (mode pieces) or cut as a stream
    members = {"conversations-000.json": json.dumps(records).encode(), "conversations-001.json": json.dumps(records[10:]).encode()}
    data = bytearray(zip_bytes(members, zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED))
    if stored:  # a letter's case: a bad CRC
        data[data.find(b"no mapping")] ^= 0x20
    else:  # the member's deflate stream cut to half in the central directory: it ends early, then its CRC fails
        cd = data.find(b"PK\x01\x02")
        struct.pack_into("<I", data, cd + 20, struct.unpack_from("<I", data, cd + 20)[0] // 2)
    path = tmp_path / "export.zip"
    path.write_bytes(bytes(data))
    _, _, errors, summary, _ = _same(path, tmp_path, mode)
    damage = [(w, r) for f, w, r, _ in errors if f.endswith("!conversations-000.json") and "damaged zip member" in r]
    kept = summary["conversations"] - (len(records) - 10)  # (the other shard's, all of them)
    assert len(damage) == 1 and damage[0][0] == f"after {kept} conversation(s)"
    if stored:  # all but the last block's records
        assert 0.8 * len(records) < kept < len(records) - 1
    else:  # what the first half of the stream inflates to, but its last block
        assert 0 < kept < 0.8 * len(records)


def test_claude_file_with_look_alikes(tmp_path, mode):
    path = tmp_path / "conversations.json"
    path.write_bytes(_claude_with_look_alikes())
    convs, _, errors, _, _ = _same(path, tmp_path, mode)
    assert convs.num_rows == 6 and any(w.startswith("record 3") for _, w, _, _ in errors)


def test_file_cut_short(tmp_path, mode):
    body = _generated(2)
    path = tmp_path / "conversations.json"
    path.write_bytes(body[: len(body) * 2 // 3])
    _, _, errors, _, _ = _same(path, tmp_path, mode)
    assert "invalid or truncated JSON" in errors[-1][2]


def test_the_upload_step_writes_the_same_outputs(tmp_path, mode):
    store = LocalObjectStore(tmp_path / "bucket")
    store.put_bytes("uploads/x/conversations.json", _generated(3))
    info = store.head("uploads/x/conversations.json")
    one = normalize_upload(store, info, "2026-03-01", workers=1)
    keys = {k: store.get_bytes(k) for k in one.written + one.unchanged + one.quarantined}
    two = normalize_upload(store, info, "2026-03-01", workers=2)
    assert (two.conversations, two.messages) == (one.conversations, one.messages)
    assert [str(e) for e in two.report.errors] == [str(e) for e in one.report.errors]
    for key, data in keys.items():
        if key.endswith(".parquet"):
            assert pq.read_table(store.download(key, tmp_path / "t.parquet")).equals(pq.read_table(pa.BufferReader(data)))
        else:
            assert store.get_bytes(key) == data


def test_workers_setting():
    assert processes.processes_for(1, 10**12) == 1
    assert processes.processes_for(3, 0) == 3
    assert processes.processes_for(None, 10**12) == min(processes.cores(), processes.MAX_AUTO_PROCESSES)
    assert processes.processes_for(None, 1000) == 1
    assert processes.processes_for(None, processes.AUTO_MIN_BYTES) == min(processes.cores(), processes.MAX_AUTO_PROCESSES)
    assert processes.processes_for(None, None) == 1  # (an unknown size: maybe small)


def test_the_command_line_starts_the_forkserver_before_its_heavy_imports():
    """`chatetl normalize`'s module imports neither the readers nor pyarrow (so the command can start
    its workers' forkserver first), and the forkserver started early is the one the pool forks from."""
    import subprocess
    import sys

    code = (
        "import sys, chatetl.cli, chatetl.cli.normalize;"
        "print(sorted(m for m in ('pyarrow', 'pydantic', 'chatetl.readers', 'chatetl.tables') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    code = (
        "from chatetl.normalize import processes; from multiprocessing import forkserver;"
        "processes.start_server(); pid = forkserver._forkserver._forkserver_pid;"
        "from concurrent.futures import ProcessPoolExecutor; import os;"
        "pool = ProcessPoolExecutor(1, mp_context=processes.context());"
        "parent = pool.submit(os.getppid).result(); pool.shutdown();"
        "print(pid is not None and parent == pid)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


def test_the_pool_starts_from_a_step_process(tmp_path):
    """Dagster runs each step in a process of its own ('forkserver' multiprocess executor): the
    pool starts from such a process too, and writes what one process writes."""
    import multiprocessing

    store = LocalObjectStore(tmp_path / "bucket")
    store.put_bytes("uploads/x/conversations.json", _generated(3))
    info = store.head("uploads/x/conversations.json")
    one = normalize_upload(store, info, "2026-03-01", workers=1)
    tables = {k: pq.read_table(store.download(k, tmp_path / k.replace("/", "_"))) for k in one.written + one.unchanged if k.endswith(".parquet")}
    for k in tables:
        store.delete(k)
    step = multiprocessing.get_context("forkserver").Process(target=normalize_upload, args=(store, info, "2026-03-01", None, 2))
    step.start()
    step.join(120)
    assert step.exitcode == 0
    for k, table in tables.items():
        assert pq.read_table(store.download(k, tmp_path / "again.parquet")).equals(table)


def test_cli_workers_option_gives_the_same_tables_summary_and_errors(tmp_path):
    import subprocess
    import sys

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "conversations.json").write_bytes(_generated(4))
    (tmp_path / "in" / "chatgpt.zip").write_bytes(chatgpt_export(shards=3))
    runs = {}
    for n in ("1", "2"):
        out = tmp_path / f"out{n}"
        runs[n] = subprocess.run(
            [sys.executable, "-m", "chatetl.cli", "normalize", str(tmp_path / "in"), "--out", str(out), "--workers", n],
            capture_output=True, text=True, check=False,
        )
        assert runs[n].returncode == 1  # the damaged records
    assert runs["2"].stdout == runs["1"].stdout and runs["2"].stderr == runs["1"].stderr
    for table in ("conversations", "messages"):
        one, two = (pq.read_table(tmp_path / f"out{n}" / table / "part-00000.parquet") for n in ("1", "2"))
        assert one.num_rows and two.equals(one)


def test_records_past_the_fast_cuts_search_go_to_the_exact_scanner(tmp_path, monkeypatch, mode):
    from chatetl.readers.jsonscan import splitter

    monkeypatch.setattr(splitter, "CUT_SEARCH", 3000)
    path = tmp_path / "conversations.json"
    path.write_bytes(_generated(4))
    _same(path, tmp_path, mode)


def test_workers_run_pyarrow_without_numpy():
    """The workers' forkserver imports pyarrow without numpy (21 MB of each worker's memory) and without its cloud
    filesystems and on the system allocator (chatetl.lean_pyarrow), and they still build Arrow tables and hand
    them back (IPC streams)."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=processes.context()) as pool:
        for name in ("numpy", "pyarrow._s3fs", "pyarrow._azurefs", "pyarrow._hdfs", "pyarrow._gcsfs"):
            assert pool.submit(eval, f"__import__('sys').modules.get({name!r}, 'not imported')").result() is None
        assert pool.submit(eval, "__import__('pyarrow').default_memory_pool().backend_name").result() == "system"
        record = json.dumps(chatgpt_conversations()[0]).encode()
        there = work.tables_of_ipc(pool.submit(work.convert_records_in_worker, "chatgpt", "x.json", None, [(0, 1, record)]).result())
    here = work.convert_records_cut("chatgpt", "x.json", None, [(0, 1, record)])
    assert there.misfit is None and there.conversations == 1
    assert list(there.tables) == list(here.tables) and here.tables[1].num_rows > 1


def test_two_cores_write_the_one_process_parts(tmp_path, monkeypatch, mode):
    """`chatetl normalize` into part files (PartsWriter, here of 2 row groups each) on one process and on
    two: the same tables once their parts are read whole (the two cut row groups differently)."""
    import functools

    import pyarrow as pa
    from click.testing import CliRunner

    from chatetl import tables
    from chatetl.cli import main

    monkeypatch.setattr(tables, "PartsWriter", functools.partial(tables.PartsWriter, row_groups=2, batch_bytes=4000))
    path = tmp_path / "conversations.json"
    path.write_bytes(_generated(40))
    tables = {}
    for n in ("1", "2"):
        result = CliRunner().invoke(main, ["normalize", str(path), "--out", str(tmp_path / n), "--workers", n, "-q"])
        assert result.exit_code == 1, result.output  # (the damaged records)
        tables[n] = {t: [pq.read_table(p) for p in sorted((tmp_path / n / t).glob("part-*.parquet"))]
                     for t in ("conversations", "messages")}
    assert len(tables["1"]["messages"]) >= 3 and len(tables["2"]["messages"]) >= 3
    for t in ("conversations", "messages"):
        assert pa.concat_tables(tables["2"][t]).equals(pa.concat_tables(tables["1"][t]))


def _sample_members(module, copy_: int) -> dict[str, bytes]:
    """The members of a platform sample's zip (chatetl.samples), each name prefixed with `copy_` in its folder."""
    with zipfile.ZipFile(io.BytesIO(module.sample()[1])) as zf:
        out = {}
        for info in zf.infolist():
            folder, _, name = info.filename.rpartition("/")
            out[f"{folder}/{copy_}-{name}" if folder else f"{copy_}-{name}"] = zf.read(info)
        return out


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_zip_of_many_small_files_is_read_in_batches_as_one_process_reads_it(tmp_path, monkeypatch, compression):
    """The members of a zip that are no array of records (AI Studio prompt files, Le Chat chats, their attachments)
    are read by the workers in groups (Pool.add_member): the tables, the report (errors in their places, skips,
    drift, files by format) and the quarantined bytes are one process's, with ChatGPT shards between them, a prompt
    file damaged past its head and, when deflated, a member whose bytes are corrupt past its head."""
    files: dict[str, bytes] = {}
    for copy_ in range(6):
        for module in (ai_studio, le_chat):
            files.update(_sample_members(module, copy_))
        if copy_ == 2:
            with zipfile.ZipFile(io.BytesIO(chatgpt_export(shards=2))) as zf:
                files.update({info.filename: zf.read(info) for info in zf.infolist()})
    prompt = json.loads(files["Takeout/Drive/Google AI Studio/0-Budget for a Lisbon trip"])
    prompt["chunkedPrompt"]["chunks"][0]["text"] = "y" * 70_000  # (past the 64 KB head detection reads)
    big = json.dumps(prompt).encode()
    files["Takeout/Drive/Google AI Studio/4-Cut short"] = big[: len(big) - 40]
    files["Takeout/Drive/Google AI Studio/5-Corrupt"] = big
    data = bytearray(zip_bytes(files, compression))
    if compression == zipfile.ZIP_DEFLATED:  # a byte of the corrupt member's deflated stream, past its head
        with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
            info = zf.getinfo("Takeout/Drive/Google AI Studio/5-Corrupt")
        data[member_data_start(data, info) + info.compress_size - 20] ^= 0xFF
    path = tmp_path / "takeout.zip"
    path.write_bytes(bytes(data))
    batched: list[str] = []
    add_member = Pool.add_member
    monkeypatch.setattr(Pool, "add_member", lambda pool, chat_file: (batched.append(chat_file.entry.name), add_member(pool, chat_file)))
    convs, _, errors, summary, _ = _same(path, tmp_path, replace(SMALL, members_bytes=9000, ranges=True))
    assert len(batched) >= 24  # (every chat file but the shards: attachments are skipped before)
    assert set(convs.column("source").to_pylist()) == {"ai-studio", "le-chat", "chatgpt"}
    assert summary["formats"]["ai-studio"] >= 12 and summary["formats"]["le-chat"] >= 12
    assert any("4-Cut short" in file for file, _, _, _ in errors)
    if compression == zipfile.ZIP_DEFLATED:
        assert any("5-Corrupt" in file for file, _, _, _ in errors)


def test_groups_are_read_under_the_limits_of_the_process_that_queued_them(tmp_path, monkeypatch):
    """A worker reads a group of members under this process's limits, not its own environment's (the forkserver
    the workers come from was started before the cap was set here): a string past a small cap refuses its file in
    both, in the same words and place."""
    files = {}
    for copy_ in range(30):
        files.update(_sample_members(ai_studio, copy_))
        prompt = json.loads(files[f"Takeout/Drive/Google AI Studio/{copy_}-Budget for a Lisbon trip"])
        prompt["chunkedPrompt"]["chunks"][0]["text"] = "y" * 3000
        files[f"Takeout/Drive/Google AI Studio/{copy_}-Budget for a Lisbon trip"] = json.dumps(prompt).encode()
    path = tmp_path / "takeout.zip"
    path.write_bytes(zip_bytes(files))
    (tmp_path / "a").mkdir()
    small_groups = replace(SMALL, members_bytes=3000)  # (about a member a group: the workers take many)
    assert not _same(path, tmp_path / "a", small_groups)[2]  # (the workers are started)
    monkeypatch.setenv("CHATETL_MAX_VALUE_BYTES", "2500")
    (tmp_path / "b").mkdir()
    errors = _same(path, tmp_path / "b", small_groups)[2]
    assert len(errors) == 30 and all("Budget" in file and "a string longer than 2500 bytes" in reason for file, _, reason, _ in errors)
