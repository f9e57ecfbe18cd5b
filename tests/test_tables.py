"""The normalized tables (chatetl.tables, the Parquet contract) read back as written: two states of
one chat in adjacent rows keep their own messages, and a folder holding the same chat exported
twice reads back whole, each state with its own messages and message count."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow.parquet as pq

from chatetl import tables
from chatetl.model import Conversation, Message, Role, Source
from chatetl.readers import ReadReport, read_path


def _conv(conv_id: str, n: int, updated: float) -> Conversation:
    msgs = [Message(message_id=f"{conv_id}:{updated}:{i}", parent_id=None, role=Role.USER, text=f"m{i}") for i in range(n)]
    return Conversation(
        source=Source.CHAT_EXPORT, platform="chatgpt", conversation_id=conv_id,
        updated_at=datetime.fromtimestamp(updated, tz=UTC), messages=msgs,
    )


def test_two_states_of_one_chat_in_a_row_keep_their_own_messages(tmp_path):
    # the same chat exported twice, files side by side in a folder: two rows with one key, adjacent
    c, m = tmp_path / "c.parquet", tmp_path / "m.parquet"
    with tables.TableWriter(c, m) as writer:
        writer.add(_conv("same", 2, 1.0))
        writer.add(_conv("same", 3, 2.0))
        writer.add(_conv("other", 1, 1.0))
    back = [conv for conv, _ in tables.iter_conversations(c, m)]
    assert [(x.conversation_id, len(x.messages)) for x in back] == [("same", 2), ("same", 3), ("other", 1)]
    assert {msg.message_id.split(":")[1] for msg in back[1].messages} == {"2.0"}


def test_folder_with_the_same_chat_exported_twice_reads_back_whole(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for day, turns in (("2026-01-01", 2), ("2026-01-02", 4)):
        chat = {
            "schema": "chat-export/1", "platform": "chatgpt", "url": "https://chatgpt.com/c/abc-123-def",
            "title": "t", "exported_at": f"{day}T00:00:00Z",
            "messages": [{"role": "user" if i % 2 == 0 else "assistant", "text": f"turn {i}"} for i in range(turns)],
        }
        (folder / f"chatgpt-t-{day}.json").write_text(json.dumps(chat))
    report = ReadReport()
    c, m = tmp_path / "c.parquet", tmp_path / "m.parquet"
    with tables.TableWriter(c, m) as writer:
        for conv in read_path(folder, report):
            writer.add(conv)
    assert not report.errors
    back = [conv for conv, _ in tables.iter_conversations(c, m)]
    assert [len(x.messages) for x in back] == [2, 4]
    assert [x.message_count for x in back] == [2, 4]


def test_a_batch_built_elsewhere_writes_the_tables_add_writes(tmp_path):
    """TableBatch (what the two-core path's workers build) and TableWriter.write_tables: the same
    tables as TableWriter.add, whatever the Arrow chunks (CHUNK_BYTES) the batch was built in."""
    convs = [_conv(f"c{i}", i % 4, float(i)) for i in range(40)]
    with tables.TableWriter(tmp_path / "c1.parquet", tmp_path / "m1.parquet", batch_bytes=2000) as writer:
        for conv in convs:
            writer.add(conv, upload_key="u")
    small = tables.TableBatch()
    small.CHUNK_BYTES = 300  # many Arrow chunks per batch
    with tables.TableWriter(tmp_path / "c2.parquet", tmp_path / "m2.parquet") as writer:
        for i, conv in enumerate(convs):
            small.add(conv, upload_key="u")
            if i % 7 == 6:
                writer.write_tables(*small.tables())
        writer.write_tables(*small.tables())
        assert small.tables() is None  # emptied
    assert (writer.conversations, writer.messages) == (40, sum(i % 4 for i in range(40)))
    for name in ("c", "m"):
        one, two = pq.read_table(tmp_path / f"{name}1.parquet"), pq.read_table(tmp_path / f"{name}2.parquet")
        assert one.num_rows and one.equals(two)
    no_messages = tables.TableBatch()
    no_messages.add(_conv("empty", 0, 1.0))
    convs_table, msgs_table = no_messages.tables()
    assert convs_table.num_rows == 1 and msgs_table is None


def _parts(folder):
    return sorted(p.name for p in folder.glob("*.parquet"))


def test_a_writer_in_parts_writes_the_one_file_tables_a_part_at_a_time(tmp_path):
    """PartsWriter (what `chatetl normalize` writes): part files of `row_groups` batches each that read
    back, in order, as the tables of one file; each part holds the messages of its own conversations, so a part
    pair reads back as conversations; the part files a run before left are gone."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    from graph_inputs import generated

    convs = generated(60, 8)
    one = tmp_path / "one.c.parquet", tmp_path / "one.m.parquet"
    with tables.TableWriter(*one, batch_bytes=3000) as writer:
        for conv in convs:
            writer.add(conv, upload_key="u")
    folders = tmp_path / "out" / "conversations", tmp_path / "out" / "messages"
    for folder in folders:
        folder.mkdir(parents=True)
        pq.write_table(pq.read_table(one[0]).slice(0, 1), folder / "part-00099.parquet")  # a run before's
    with tables.PartsWriter(*folders, row_groups=3, batch_bytes=3000, batch_messages=60) as writer:
        for conv in convs:
            writer.add(conv, upload_key="u")
    names = _parts(folders[0])
    assert len(names) >= 3 and names == _parts(folders[1]) == [f"part-{i:05d}.parquet" for i in range(len(names))]
    for folder, whole in zip(folders, one, strict=True):
        assert all(pq.ParquetFile(folder / n).metadata.num_row_groups <= 3 for n in names)
        expected = pq.read_table(whole)
        assert pa.concat_tables([pq.read_table(folder / n) for n in names]).equals(expected)
        assert ds.dataset(folder).to_table().equals(expected)
    back = [c for n in names for c, _ in tables.iter_conversations(folders[0] / n, folders[1] / n)]
    assert back == [c for c, _ in tables.iter_conversations(*one)]


def test_a_writer_in_parts_writes_its_first_part_when_nothing_comes(tmp_path):
    folders = tmp_path / "c", tmp_path / "m"
    for folder in folders:
        folder.mkdir()
    with tables.PartsWriter(*folders):
        pass
    assert _parts(folders[0]) == _parts(folders[1]) == ["part-00000.parquet"]
    assert pq.read_table(folders[1] / "part-00000.parquet").schema.equals(tables.MESSAGES_SCHEMA)
