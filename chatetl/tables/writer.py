"""Both tables written to local Parquet files in bounded batches: one file each, or folders of parts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Self

import pyarrow as pa
import pyarrow.parquet as pq

from chatetl.model import Conversation
from chatetl.tables.encode import TableBatch
from chatetl.tables.schema import CONVERSATIONS_SCHEMA, MESSAGES_SCHEMA


class TableWriter:
    """Writes both tables to local Parquet files in bounded batches.

    Rows go into a TableBatch (one Python list per column, turned into Arrow one column at a
    time), flushed when its text passes `batch_bytes` (one Parquet row group of about that size)
    or its rows pass `batch_messages`; `write_tables` takes batches built elsewhere. The Parquet encoding and
    compression of a batch run in a thread (pyarrow releases the GIL) while the next batch is
    built; at most one batch is in flight.

    One file per table keeps every row group's metadata in memory until it is closed (pyarrow's
    ParquetWriter: about 40 KB a row group of both tables); `PartsWriter` writes folders of part files
    instead, so its memory does not grow with the input.
    """

    def __init__(
        self,
        conversations_path: str | Path,
        messages_path: str | Path,
        batch_messages: int = 20_000,
        batch_bytes: int = 2 * 1024 * 1024,  # (a bigger one: more peak memory, files hardly smaller)
    ) -> None:
        self.batch_messages = batch_messages
        self.batch_bytes = batch_bytes
        self._row_groups = 0  # batches written to the files open now
        self._open(conversations_path, messages_path)
        self._batch = TableBatch()
        self._pool: Any = None
        self._pending: Any = None
        self.conversations = 0
        self.messages = 0

    def _open(self, conversations_path: str | Path, messages_path: str | Path) -> None:
        self._conv_writer = pq.ParquetWriter(str(conversations_path), CONVERSATIONS_SCHEMA, compression="zstd", use_dictionary=_REPEATING)
        self._msg_writer = pq.ParquetWriter(str(messages_path), MESSAGES_SCHEMA, compression="zstd", use_dictionary=_REPEATING)

    def add(self, conv: Conversation, upload_key: str | None = None) -> None:
        self.conversations += 1
        self.messages += len(conv.messages)
        batch = self._batch
        batch.add(conv, upload_key)
        if batch.bytes >= self.batch_bytes or batch.rows >= self.batch_messages:
            self.flush()

    def flush(self) -> None:
        built = self._batch.tables()
        if built is not None:
            self._write_in_thread(*built)

    def write_tables(self, convs: pa.Table, msgs: pa.Table | None) -> None:
        """Arrow tables of a batch built elsewhere (a worker's TableBatch) into the files, after
        what `add` holds, counted like added conversations."""
        self.flush()
        self.conversations += convs.num_rows
        self.messages += msgs.num_rows if msgs is not None else 0
        self._write_in_thread(convs, msgs)

    def _write_in_thread(self, convs: pa.Table, msgs: pa.Table | None) -> None:
        self._wait()
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="parquet")
        self._pending = self._pool.submit(self._write, convs, msgs)

    def _write(self, convs: pa.Table | None, msgs: pa.Table | None) -> None:
        if convs is not None:
            self._conv_writer.write_table(convs)
        if msgs is not None:
            self._msg_writer.write_table(msgs)
        self._row_groups += 1

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def close(self) -> None:
        try:
            self.flush()
            self._wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
            self._conv_writer.close()
            self._msg_writer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PartsWriter(TableWriter):
    """Both tables as folders of part files: `part-00000.parquet`, `part-00001.parquet` ... in each folder (a
    `pyarrow.dataset` of either folder reads its table, in order), a part of `row_groups` (PART_ROW_GROUPS)
    batches at most, the messages of a part's conversations in the same part of the messages folder. Its
    memory does not grow with the input: both part files are closed as they fill. A part written elsewhere
    (at `spare_paths`, by another process) takes its place among them by `adopt`: renamed, not encoded again.
    The part files the folders held (a run before, of more parts) are removed first; the first part is
    written even when nothing is. `options` are TableWriter's."""

    PART_ROW_GROUPS = 64  # batches (row groups) in one part file: about 130 MB of text, 2.5 MB of metadata held

    def __init__(self, conversations_folder: str | Path, messages_folder: str | Path, row_groups: int | None = None,
                 **options: Any) -> None:
        self._folders = (Path(conversations_folder), Path(messages_folder))
        for folder in self._folders:
            for old in [*folder.glob("part-*.parquet"), *folder.glob(".spare-*.parquet")]:
                old.unlink()
        self._part_row_groups = row_groups or self.PART_ROW_GROUPS
        self._part = 0
        super().__init__(*self._part_paths(0), **options)

    def _part_paths(self, n: int) -> tuple[Path, Path]:
        conversations, messages = self._folders
        return conversations / f"part-{n:05d}.parquet", messages / f"part-{n:05d}.parquet"

    def spare_paths(self, name: str) -> tuple[Path, Path]:
        """Paths in the part folders for a part written elsewhere, read as a part only once `adopt` has named it."""
        conversations, messages = self._folders
        return conversations / f".spare-{name}.parquet", messages / f".spare-{name}.parquet"

    def adopt(self, conversations_path: str | Path, messages_path: str | Path, conversations: int, messages: int) -> None:
        """A part written elsewhere (at `spare_paths`), of `conversations` and `messages` rows, put after what
        this writer holds: the part open now is closed (its number reused when it holds nothing), the files
        renamed to the next part, and a new part opened for what comes after."""
        self.flush()
        self._wait()
        self._conv_writer.close()
        self._msg_writer.close()
        if self._row_groups:
            self._part += 1
        for path, new in zip((conversations_path, messages_path), self._part_paths(self._part), strict=True):
            os.replace(path, new)
        self._part += 1
        self._open(*self._part_paths(self._part))
        self._row_groups = 0
        self.conversations += conversations
        self.messages += messages

    def _write(self, convs: pa.Table | None, msgs: pa.Table | None) -> None:
        if self._row_groups == self._part_row_groups:  # the part is full: the next one
            self._conv_writer.close()
            self._msg_writer.close()
            self._part += 1
            self._open(*self._part_paths(self._part))
            self._row_groups = 0
        super()._write(convs, msgs)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._part and not self._row_groups:  # after adopted parts: nothing
                for path in self._part_paths(self._part):
                    path.unlink(missing_ok=True)


# Columns whose values repeat (keys, a conversation's ids on each of its messages, enumerations)
# are dictionary-encoded; on the others (ids of one message, text, JSON) Parquet would try a
# dictionary and give it up, a tenth of the encoding's time.
_REPEATING = [
    "conversation_key", "source", "platform", "conversation_id", "model", "models_used.list.element", "timezone", "source_file",
    "upload_key", "role", "kind", "author_name", "recipient", "content_type",
]
