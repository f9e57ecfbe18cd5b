"""The chunks' vectors in the bucket: one Parquet file per upload beside its chunks, readable without Neo4j.

    rag/embeddings/date=D/<upload-id>.parquet

One row per chunk, in the chunks' order: `chunk_id`, `document_key`, `conversation_id`,
`source` (the platform), `title`, `position`, `char_start`, `char_end`, `text`, `text_sha256`,
`embedding_model` and `embedding`, a fixed-size list of float32 (a `FixedSizeListArray` in pyarrow
and pandas, what LanceDB takes as a vector column; DuckDB reads it as `FLOAT[]`, cast to `FLOAT[256]`). The file's schema
metadata names the model and the dimensions. Written one row group per batch of
conversations, so memory does not grow with the upload.

A rerun reads the previous file back in step with the new chunks (`PreviousVectors`): the
rows come in the order they were written, so only a window of them is held, and a chunk whose
text and model are unchanged takes its vector from there instead of from the model.

The step that writes the graph reads the file back in the chunks' order (`StoredVectors`), and a
step that embeds keeps what it computed for the rest of its run on disk (`RunVectors`).

For example, in DuckDB:

    SELECT title, text FROM read_parquet('rag/embeddings/*/*.parquet')
    ORDER BY array_cosine_similarity(embedding::FLOAT[256], $query::FLOAT[256]) DESC LIMIT 5;
"""

from __future__ import annotations

import sqlite3
from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Self

import pyarrow as pa
import pyarrow.parquet as pq

from chatetl.rag.chunking import Chunk

WINDOW = 20_000  # rows of the previous file held at most beyond the batch being matched


def schema(dimensions: int, model: str) -> pa.Schema:
    return pa.schema(
        [
            ("chunk_id", pa.string()),
            ("document_key", pa.string()),
            ("conversation_id", pa.string()),
            ("source", pa.string()),
            ("title", pa.string()),
            ("position", pa.int32()),
            ("char_start", pa.int64()),
            ("char_end", pa.int64()),
            ("text", pa.string()),
            ("text_sha256", pa.string()),
            ("embedding_model", pa.string()),
            ("embedding", pa.list_(pa.float32(), dimensions)),
        ],
        metadata={"embedding_model": model, "embedding_dimensions": str(dimensions)},
    )


class VectorsWriter:
    """Rows of embedded chunks into one Parquet file, a row group per `write`; no file without rows."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None
        self._schema: pa.Schema | None = None

    def write(self, chunks: Sequence[Chunk]) -> None:
        chunks = [c for c in chunks if c.embedding is not None]
        if not chunks:
            return
        if self._writer is None:
            first = chunks[0]
            self._schema = schema(len(first.embedding or ()), first.embedding_model or "")
            self._writer = pq.ParquetWriter(self.path, self._schema, compression="zstd")
        assert self._schema is not None
        dims = self._schema.field("embedding").type.list_size
        flat: list[float] = []
        for c in chunks:
            if len(c.embedding or ()) != dims:
                raise ValueError(f"chunk {c.id}: a vector of {len(c.embedding or ())} dimensions among vectors of {dims}")
            flat.extend(c.embedding or ())
        columns = {
            "chunk_id": [c.id for c in chunks],
            "document_key": [c.document_key for c in chunks],
            "conversation_id": [c.conversation_id for c in chunks],
            "source": [c.source for c in chunks],
            "title": [c.title for c in chunks],
            "position": [c.position for c in chunks],
            "char_start": [c.char_start for c in chunks],
            "char_end": [c.char_end for c in chunks],
            "text": [c.text for c in chunks],
            "text_sha256": [c.text_sha256 for c in chunks],
            "embedding_model": [c.embedding_model for c in chunks],
        }
        arrays = [pa.array(columns[f.name], f.type) for f in self._schema if f.name != "embedding"]
        arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), dims))
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=self._schema))
        self.rows += len(chunks)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PreviousVectors:
    """A previous run's vectors of one model, read in step with the new run's chunks.

    `take(hashes)` is called once per batch, in order: it reads the previous file up to as far
    as the new run has come (plus a lookahead), keeps the rows not further back than the
    lookahead, and returns the vectors it holds for these text hashes. A missing file, another
    model's file or an unreadable one reuses nothing (the model embeds)."""

    def __init__(self, path: str | Path | None, model: str, lookahead: int = WINDOW) -> None:
        self.model = model
        self.lookahead = lookahead
        self._rows: Iterator[tuple[str, str, list[float]]] = iter(())
        self._held: dict[str, tuple[int, list[float]]] = {}
        self._order: deque[tuple[int, str]] = deque()
        self._read = 0  # rows of the previous file read so far
        self._asked = 0  # chunks the new run asked for so far
        if path is not None and Path(path).is_file():
            try:
                file = pq.ParquetFile(path)
                if file.schema_arrow.metadata and file.schema_arrow.metadata.get(b"embedding_model") == model.encode():
                    self._rows = self._iter_rows(file)
            except (pa.ArrowException, OSError):
                pass

    @staticmethod
    def _iter_rows(file: pq.ParquetFile) -> Iterator[tuple[str, str, list[float]]]:
        try:
            for batch in file.iter_batches(batch_size=2048, columns=["text_sha256", "embedding_model", "embedding"]):
                yield from zip(*(batch.column(i).to_pylist() for i in range(3)))
        except (pa.ArrowException, OSError):
            return  # a damaged file: what was read is used, the rest is embedded again

    def take(self, hashes: list[str]) -> dict[str, list[float]]:
        start = self._asked
        self._asked += len(hashes)
        while self._read < self._asked + self.lookahead:
            row = next(self._rows, None)
            if row is None:
                break
            digest, model, vector = row
            if model == self.model and vector is not None:
                self._held[digest] = (self._read, vector)
                self._order.append((self._read, digest))
            self._read += 1
        while self._order and self._order[0][0] < start - self.lookahead:
            index, digest = self._order.popleft()
            if self._held.get(digest, (None,))[0] == index:
                del self._held[digest]
        return {h: self._held[h][1] for h in hashes if h in self._held}


class StoredVectors:
    """A vectors file read back in the chunks' order: `take(ids)` gives the next rows, which must be these chunks'
    (a file that does not match its chunks is an error, not a guess). Rows stay Arrow until a vector is asked for
    (`vector(row)`), so chunks the graph holds already cost no conversion."""

    def __init__(self, path: str | Path, skip: int = 0) -> None:
        self.path = Path(path)
        file = pq.ParquetFile(self.path)
        metadata = file.schema_arrow.metadata or {}
        self.model: str = metadata.get(b"embedding_model", b"").decode()
        self._rows = self._iter_rows(file)
        for _ in range(skip):
            next(self._rows)
        self.position = skip  # rows taken so far

    @staticmethod
    def _iter_rows(file: pq.ParquetFile) -> Iterator[tuple[str, Any]]:
        for batch in file.iter_batches(batch_size=2048, columns=["chunk_id", "embedding"]):
            ids = batch.column(0).to_pylist()
            embedding = batch.column(1)
            dims = embedding.type.list_size
            flat = embedding.flatten().to_numpy(zero_copy_only=False).reshape(len(ids), dims)
            yield from zip(ids, flat, strict=True)

    def take(self, ids: Sequence[str]) -> list[Any]:
        """The next rows (one per id, in order), as `vector` takes them."""
        rows = []
        for chunk_id in ids:
            row = next(self._rows, None)
            if row is None or row[0] != chunk_id:
                raise ValueError(f"{self.path.name}: row {self.position} is {row[0] if row else 'missing'}, not chunk {chunk_id}")
            rows.append(row[1])
            self.position += 1
        return rows

    @staticmethod
    def vector(row: Any) -> list[float]:
        values: list[float] = row.tolist()  # float32 values as Python floats: what the model gave
        return values


class RunVectors:
    """The vectors a run computed so far, by text hash and model, in a SQLite file of a temporary folder: a later
    chunk of the same text in the run takes its vector from here (where a run that wrote each chunk to the graph
    at once found it there). Memory stays flat however many chunks the run embeds."""

    def __init__(self, folder: str | Path) -> None:
        self._db = sqlite3.connect(Path(folder, "run-vectors.sqlite"))
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (digest TEXT, model TEXT, vector BLOB, PRIMARY KEY (digest, model))")

    def add(self, chunks: Sequence[Chunk]) -> None:
        rows = [(c.text_sha256, c.embedding_model, array("f", c.embedding).tobytes())
                for c in chunks if c.embedding is not None and c.embedding_model is not None]
        self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)", rows)

    def take(self, model: str, hashes: Sequence[str], batch: int = 500) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        for i in range(0, len(hashes), batch):
            part = list(hashes[i:i + batch])
            marks = ",".join("?" * len(part))
            query = f"SELECT digest, vector FROM vectors WHERE model = ? AND digest IN ({marks})"  # (placeholders only)
            for digest, blob in self._db.execute(query, [model, *part]):
                found[digest] = array("f", blob).tolist()
        return found

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
