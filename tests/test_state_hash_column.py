"""The conversations table's `state_hash` column (issue 11): computed once when a state is written, the same value
`state_hash` gives for the conversation read back (so graphs, manifests and Documents made before compare equal),
carried by the conversations read back, and computed again where a file written before lacks it."""

from __future__ import annotations

import copy
import json
import pickle
from datetime import UTC
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from graph_inputs import generated, read, write_inputs

from chatetl import tables
from chatetl.ingest.checks import check_normalized_pair
from chatetl.model import computed_state_hash, state_hash, state_version
from chatetl.readers import read_path
from chatetl.readers.report import ReadReport
from chatetl.samples import sample_uploads
from chatetl.tables import TableWriter, iter_conversations, read_rows, table_states


def _corpus(tmp_path: Path) -> list:
    """Every source format (their meta and extra fields too), the samples and generated chats."""
    convs = [c for p in write_inputs(tmp_path / "inputs").values() for c in read(p)]
    for name, data in sample_uploads().items():
        path = tmp_path / name.replace("/", "_")
        path.write_bytes(data)
        convs += list(read_path(path, ReadReport()))
    gen = generated(12, 5)
    for c in gen[::4]:
        c.updated_at = None  # (state_version from the messages' times)
    return convs + gen


def _write(convs, folder: Path, **options) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / "c.parquet", folder / "m.parquet"
    with TableWriter(*paths, **options) as writer:
        for conv in convs:
            writer.add(conv, upload_key="raw/x.json")
    return paths


def _without_state_hash(paths: tuple[Path, Path], folder: Path) -> tuple[Path, Path]:
    """The same tables as a writer before the column wrote them."""
    folder.mkdir(parents=True, exist_ok=True)
    table = pq.read_table(paths[0])
    old = folder / "c.parquet", folder / "m.parquet"
    pq.write_table(table.drop_columns(["state_hash"]), old[0])
    old[1].write_bytes(paths[1].read_bytes())
    return old


def test_the_column_is_the_hash_of_the_state_read_back(tmp_path):
    convs = _corpus(tmp_path)
    paths = _write(convs, tmp_path / "t")
    stored = [r["state_hash"] for r in read_rows(paths[0], ["state_hash"])]
    back = [c for c, _ in iter_conversations(*paths)]
    assert len(back) == len(convs) and None not in stored
    # what every stage hashed before the column: the conversation as the tables give it back
    assert stored == [computed_state_hash(c) for c in back]
    assert [state_hash(c) for c in back] == stored  # carried, not computed again
    # meta and extra read back from their JSON are for some sources not the reader's own dicts, their keys in
    # another order (the case is covered); they are hashed as that JSON, so the reader's conversation hashes the
    # same as the one read back
    assert any(repr(a.meta) != repr(b.meta) or any(repr(x.extra) != repr(y.extra) for x, y in zip(a.messages, b.messages))
               for a, b in zip(convs, back))
    assert [computed_state_hash(a) for a in convs] == stored


def test_a_file_written_before_the_column_reads_back_the_same(tmp_path):
    convs = _corpus(tmp_path)
    paths = _write(convs, tmp_path / "new")
    old = _without_state_hash(paths, tmp_path / "old")
    new_back = [c for c, _ in iter_conversations(*paths)]
    old_back = [c for c, _ in iter_conversations(*old)]
    assert old_back == new_back
    assert [state_hash(c) for c in old_back] == [state_hash(c) for c in new_back]
    assert table_states(*old) is None  # read whole to be hashed
    # the contract check takes both
    for pair in (paths, old):
        assert check_normalized_pair(*pair, "x")["columns"].passed


def test_a_changed_or_copied_conversation_does_not_keep_the_stored_hash(tmp_path):
    convs = generated(3, 4)
    paths = _write(convs, tmp_path / "t")
    back = [c for c, _ in iter_conversations(*paths)]
    conv = back[0]
    stored = state_hash(conv)
    assert conv._stored_state_hash == stored
    changed = conv.model_copy(update={"title": "Another title"})
    assert state_hash(changed) == computed_state_hash(changed) != stored
    for twin in (copy.deepcopy(conv), copy.copy(conv), pickle.loads(pickle.dumps(conv)), conv.model_copy()):
        assert getattr(twin, "_stored_state_hash", None) is None and state_hash(twin) == stored and twin == conv
    moved = back[1]
    moved.source_file = "elsewhere.json"  # not part of the state: the hash stays
    assert moved._stored_state_hash is not None
    conv.title = "Renamed in place"
    assert state_hash(conv) == computed_state_hash(conv) != stored
    shorter = back[2]
    shorter.messages = shorter.messages[:-1]
    assert state_hash(shorter) == computed_state_hash(shorter)


@pytest.mark.parametrize("read_back_rows", [None, 5])
@pytest.mark.parametrize("batch_messages", [7, 40])
def test_selected_rows_read_the_same_conversations(tmp_path, batch_messages, read_back_rows, monkeypatch):
    convs = _corpus(tmp_path)
    # small row groups: conversations cut across them; larger ones: several conversations in each, read together
    paths = _write(convs, tmp_path / "t", batch_messages=batch_messages)
    assert pq.ParquetFile(paths[1]).num_row_groups > 5
    if read_back_rows is not None:  # neighbours read back a few rows at a time (some conversations have more)
        assert max(len(c.messages) for c in convs) > read_back_rows
        monkeypatch.setattr(tables.decode, "READ_BACK_ROWS", read_back_rows)
    built: list[int] = []  # the rows built at a time: a run of neighbours, or one conversation of more
    keyed_messages = tables.decode._keyed_messages
    monkeypatch.setattr(tables.decode, "_keyed_messages", lambda parts: keyed_messages([p for p in parts if not built.append(p.num_rows)]))
    everything = list(iter_conversations(*paths))
    for rows in ([], [0], [len(convs) - 1], list(range(0, len(convs), 3)), [5, 2, 2, 9], list(range(len(convs))),
                 list(range(1, len(convs), 2)), [i for i in range(len(convs)) if i % 5 != 2]):
        picked = list(iter_conversations(*paths, rows=rows))
        assert picked == [everything[i] for i in sorted(set(rows))]
        assert [state_hash(c) for c, _ in picked] == [state_hash(everything[i][0]) for i in sorted(set(rows))]
    assert max(built) <= max(tables.decode.READ_BACK_ROWS, *(len(c.messages) for c in convs))


def test_table_states_are_the_states_of_the_conversations(tmp_path):
    convs = _corpus(tmp_path)
    paths = _write(convs, tmp_path / "t", batch_messages=11)
    back = [c for c, _ in iter_conversations(*paths)]
    states = table_states(*paths)
    assert any(c.updated_at is None and c.messages for c in back)
    assert [s["conversation_key"] for s in states] == [c.key for c in back]
    assert [s["state_version"] for s in states] == [state_version(c) for c in back]
    assert [s["state_hash"] for s in states] == [computed_state_hash(c) for c in back]
    assert [(s["source"], s["source_file"]) for s in states] == [(c.source.value, c.source_file) for c in back]


def test_a_messages_table_out_of_step_is_refused_on_either_path(tmp_path):
    convs = generated(3, 4)
    paths = _write(convs, tmp_path / "t")
    short = _write(convs[:2], tmp_path / "short")
    for rows in (None, [2]):
        with pytest.raises(ValueError, match="out of step"):
            list(iter_conversations(paths[0], short[1], rows=rows))


def _validated(paths: tuple[Path, Path]) -> list:
    """The conversations of the tables as pydantic validates them from their rows (how they were read back before
    the columns were read with the fast constructors): the reference of the read-back."""
    from chatetl.model import (
        Attachment,
        Citation,
        Conversation,
        Message,
        MessageKind,
        Role,
        Source,
        ToolCall,
        ToolResult,
    )

    lists = (("tool_calls", ToolCall), ("tool_results", ToolResult), ("citations", Citation), ("attachments", Attachment))
    plain = ("message_id", "parent_id", "seq", "branch_index", "created_at", "model", "author_name", "recipient", "content_type", "reasoning")
    messages = read_rows(paths[1])
    out = []
    for row in read_rows(paths[0]):
        conv = Conversation(**{n: row[n] for n in ("platform", "conversation_id", "title", "created_at", "updated_at", "model", "url",
                                                    "timezone", "current_node", "source_file")},
                            source=Source(row["source"]), meta=json.loads(row["meta"]) if row["meta"] else {})
        mrows = [next(messages) for _ in range(row["total_messages"])]
        conv.messages = [Message(**{n: m[n] for n in plain}, **{c: [cls(**i) for i in m[c] or []] for c, cls in lists},
                                 role=Role(m["role"]), kind=MessageKind(m["kind"]), text=m["text"] or "",
                                 on_active_branch=bool(m["on_active_branch"]), extra=json.loads(m["extra"]) if m["extra"] else {})
                         for m in mrows]
        out.append(conv)
    return out


def test_tables_read_back_as_pydantic_validates_them(tmp_path):
    """The read-back (columns, fast constructors) gives the conversations pydantic validates from the rows: equal
    fields, types and fields set, every item too; and the same for a selection of rows."""
    convs = _corpus(tmp_path)
    paths = _write(convs, tmp_path / "t")
    reference = _validated(paths)
    back = [c for c, _ in iter_conversations(*paths)]
    assert back == reference and len(back) == len(convs)
    for a, b in zip(back, reference):
        assert a.model_fields_set == b.model_fields_set
        for x, y in zip(a.messages, b.messages):
            assert x.model_fields_set == y.model_fields_set and x.__dict__ == y.__dict__
            assert [type(v) for v in x.__dict__.values()] == [type(v) for v in y.__dict__.values()]
            assert x.created_at is None or x.created_at.tzinfo is UTC
    assert any(m.tool_calls or m.citations or m.attachments or m.tool_results for c in back for m in c.messages)
    picked = [c for c, _ in iter_conversations(*paths, rows=range(0, len(convs), 3))]
    assert picked == reference[::3]


def _hash_as_defined(conv) -> str:
    """`computed_state_hash` spelled out field by field, as it was first written (each message's hashed fields, its
    item lists as lists of the items' field dicts, its extra as source fields JSON): the C-built path must match it."""
    import hashlib

    import orjson

    from chatetl.model import HASHED_MESSAGE_FIELDS, Conversation, source_fields_json

    conv_fields = tuple(getattr(conv, n) for n in Conversation.model_fields if n not in ("source_file", "messages", "meta"))
    rows = [
        (tuple(getattr(m, n) for n in HASHED_MESSAGE_FIELDS),
         *[[item.__dict__ for item in getattr(m, name)] for name in ("tool_calls", "tool_results", "citations", "attachments")],
         source_fields_json(m.extra))
        for m in conv.messages
    ]
    return hashlib.sha256(orjson.dumps((conv_fields, source_fields_json(conv.meta), rows))).hexdigest()[:32]


def test_the_hash_computed_from_the_model_is_the_hash_as_defined(tmp_path):
    convs = _corpus(tmp_path)
    with_items = [c for c in convs if any(m.tool_calls or m.tool_results or m.citations or m.attachments for m in c.messages)]
    assert len(with_items) >= 5 and any(m.extra for c in convs for m in c.messages)
    for conv in convs:
        assert computed_state_hash(conv) == _hash_as_defined(conv), conv.key
