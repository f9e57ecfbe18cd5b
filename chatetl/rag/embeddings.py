"""Embeddings for chunks: a model that ships inside a package (wordllama by default, MiniLM as an option), or a
bigger local one; never a download.

The default model is wordllama's `l2_supercat` (256 dimensions): its weights and tokenizer are
files of the `wordllama` wheel itself, so it works offline on a fresh machine. wordllama's own
lookup searches `wordllama/tokenizer/` for a tokenizer that the wheel ships in
`wordllama/tokenizers/`, then tries the Hugging Face hub; loading it with the package folder as
the cache folder and downloads disabled finds both files where they are, and fails (instead of
fetching) if they are not (wordllama's `WordLlama.load`, wordllama/wordllama.py). Its vectors
are the average of the text's token embeddings, normalized: a few milliseconds for a chunk.

Settings (chatetl.settings):
- `CHATETL_EMBEDDINGS` (on by default): off means no embeddings, no vector index, no Parquet;
- `CHATETL_EMBEDDER`: a packaged model by its name (`PACKAGED_MODELS`: `wordllama`, the default;
  `minilm`, all-MiniLM-L6-v2 from the `minilm` extra's wheels, chatetl.rag.minilm), or
  `package.module:callable`, a callable of a bigger model already on the machine (texts in, one
  vector per text out). Its vector size is the model's: the callable's `dimensions` attribute
  when it has one, else the first vectors'.

Every vector is rounded to float32 (what the graph and the Parquet store), so a vector reused
from a previous run is bit-for-bit the one computed now. `embed_chunks` embeds only the texts
whose vector is not known yet: the caller passes what earlier runs stored (keyed by the model
and the text's sha256: chatetl.rag.vectors, chatetl.graph.chunks.stored_embeddings), so an
unchanged rerun costs no embedding time.
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chatetl.rag import minilm
from chatetl.rag.chunking import Chunk
from chatetl.settings import SettingError, Settings

VectorsOf = Callable[[list[str]], Sequence[Sequence[float]]]  # texts in, one vector per text out
BUILTIN_MODEL = "wordllama/l2_supercat-256"
BUILTIN_DIMENSIONS = 256


@dataclass
class Embedder:
    """A named model: `name` keys the vectors it made (a vector of another model is never reused),
    `dimensions` its vector size (None: known from its first vectors). Counts its work."""

    name: str
    vectors_of: VectorsOf
    dimensions: int | None = None
    calls: int = field(default=0, compare=False)
    texts: int = field(default=0, compare=False)
    seconds: float = field(default=0.0, compare=False)

    def __call__(self, texts: list[str]) -> list[list[float]]:
        """One float32 vector per text, checked: as many as texts, all one size, finite."""
        import numpy as np

        if not texts:
            return []
        start = time.perf_counter()
        raw = self.vectors_of(list(texts))
        self.seconds += time.perf_counter() - start
        self.calls += 1
        self.texts += len(texts)
        if len(raw) != len(texts):
            raise ValueError(f"the embedder {self.name} returned {len(raw)} vectors for {len(texts)} texts")
        sizes = {len(vec) for vec in raw}
        if len(sizes) > 1 or (self.dimensions is not None and sizes != {self.dimensions}):
            expected = self.dimensions or min(sizes)
            raise ValueError(f"the embedder {self.name} returned a vector of {max(sizes - {expected})} dimensions, not {expected}")
        vectors = np.asarray(raw, dtype=np.float32)  # what the graph and the Parquet hold
        if vectors.ndim != 2 or not vectors.shape[1] or not np.isfinite(vectors).all():
            raise ValueError(f"the embedder {self.name} returned an empty or non-finite vector")
        self.dimensions = vectors.shape[1]
        listed: list[list[float]] = vectors.tolist()
        return listed


def as_embedder(model: Embedder | VectorsOf) -> Embedder:
    """An Embedder; a plain callable is named by where it lives (`module:qualname`)."""
    if isinstance(model, Embedder):
        return model
    if not callable(model):
        raise TypeError(f"not an embedder: {model!r}")
    name = f"{getattr(model, '__module__', None) or '?'}:{getattr(model, '__qualname__', None) or type(model).__qualname__}"
    dims = getattr(model, "dimensions", None)
    return Embedder(name=name, vectors_of=model, dimensions=int(dims) if isinstance(dims, int) else None)


@functools.cache
def _wordllama() -> Any:
    import wordllama
    from wordllama import WordLlama

    return WordLlama.load(config="l2_supercat", dim=BUILTIN_DIMENSIONS, cache_dir=Path(wordllama.__file__).parent, disable_download=True)


# How the built-in model's tokenizer normalizes a text (Llama's SentencePiece layout): "▁" put before it and for
# each space. `_builtin_tokenizer` does that in Python (str.replace) and reads the ids without their offsets
# (`encode_batch_fast`): the same ids for less of the tokenizer's CPU (bench/RESULTS.md; tests/rag/test_embeddings.py
# compares the vectors).
_LLAMA_NORMALIZER = {
    "type": "Sequence",
    "normalizers": [{"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}],
}


@functools.cache
def _builtin_tokenizer() -> tuple[Any, Callable[[str], str] | None]:
    """A copy of the built-in model's tokenizer, without padding, and how to normalize a text for it: with its
    normalizer taken over here where it is Llama's (`_LLAMA_NORMALIZER`), else None (it normalizes itself)."""
    import json

    from tokenizers import Tokenizer

    spec = _wordllama().tokenizer.to_str()
    tokenizer = Tokenizer.from_str(spec)
    tokenizer.no_padding()
    if json.loads(spec).get("normalizer") != _LLAMA_NORMALIZER:
        return tokenizer, None
    tokenizer.normalizer = None
    return tokenizer, _llama_normalized


def _llama_normalized(text: str) -> str:
    """`_LLAMA_NORMALIZER` applied (an empty text stays empty, as its Prepend leaves it)."""
    return "\u2581" + text.replace(" ", "\u2581") if text else text


def builtin_embedder() -> Embedder:
    """wordllama's l2_supercat, from the files of its wheel (the model is loaded at its first use, once per process:
    a load with nothing to embed, such as an unchanged rerun, never spends that time).

    The vector is wordllama's (`WordLlamaInference.embed`: the mean of the text's token
    embeddings), normalized; pooled here per text rather than over padded batches, which spend
    their time on padding: the same values, sooner (tokenizing is most of the rest). The texts are
    tokenized as `_builtin_tokenizer` says (bench/RESULTS.md has both measurements)."""
    import numpy as np

    def vectors_of(texts: list[str]) -> Sequence[Sequence[float]]:
        table = _wordllama().embedding
        tokenizer, normalized = _builtin_tokenizer()
        last = table.shape[0] - 1
        out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        inputs = texts if normalized is None else [normalized(t) for t in texts]
        for i, encoding in enumerate(tokenizer.encode_batch_fast(inputs, add_special_tokens=False)):
            if encoding.ids:
                ids = np.clip(np.asarray(encoding.ids, dtype=np.int64), 0, last)
                out[i] = table[ids].sum(axis=0, dtype=np.float32) / np.float32(len(ids))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0  # a text without tokens: a zero vector (the vector index leaves it out)
        normalized_vectors: Sequence[Sequence[float]] = out / norms
        return normalized_vectors

    return Embedder(name=BUILTIN_MODEL, vectors_of=vectors_of, dimensions=BUILTIN_DIMENSIONS)


def minilm_embedder() -> Embedder:
    """all-MiniLM-L6-v2 from the `minilm` extra's wheels (chatetl.rag.minilm), loaded at its first use."""
    return Embedder(name=minilm.MODEL, vectors_of=minilm.minilm_vectors, dimensions=minilm.DIMENSIONS)


# The models a wheel ships, by the name CHATETL_EMBEDDER gives them (the default is the first).
PACKAGED_MODELS: dict[str, Callable[[], Embedder]] = {"wordllama": builtin_embedder, "minilm": minilm_embedder}


def load_embedder(spec: str | None = None, settings: Settings | None = None) -> Embedder | None:
    """The embedder of the settings: None when `CHATETL_EMBEDDINGS` is off, else the one `spec`
    names (default `CHATETL_EMBEDDER`): a packaged model's name (`PACKAGED_MODELS`), or a callable
    (`package.module:callable`); with none named, the built-in model.

    The callable takes a list of texts and returns one vector per text. It must run a model
    that is already on the machine (e.g. a sentence-transformers model loaded from a local
    folder); chatetl itself never downloads weights.
    """
    settings = settings or Settings.from_env()
    if not settings.embeddings:
        return None
    spec = (spec if spec is not None else settings.embedder or "").strip()
    if not spec:
        return builtin_embedder()
    if spec in PACKAGED_MODELS:
        return PACKAGED_MODELS[spec]()
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise SettingError(f"CHATETL_EMBEDDER={spec!r}: expected {' or '.join(PACKAGED_MODELS)} or 'package.module:callable'")
    target: Any = importlib.import_module(module)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise SettingError(f"CHATETL_EMBEDDER={spec!r} is not callable")
    embedder = as_embedder(target)
    embedder.name = spec
    return embedder


Known = Callable[[list[str]], Mapping[str, Sequence[float]]]  # text sha256s -> the vectors stored for them


def embed_chunks(chunks: list[Chunk], model: Embedder | VectorsOf, known: Known | None = None, batch: int = 256) -> int:
    """Give every chunk its vector: the one `known` has for its text, else the model's (each
    distinct text embedded once). Returns how many chunks the model embedded."""
    embedder = as_embedder(model)
    wanted = list(dict.fromkeys(c.text_sha256 for c in chunks))
    found: dict[str, Sequence[float]] = dict(known(wanted)) if known is not None and wanted else {}
    texts = {c.text_sha256: c.text for c in chunks}
    todo = [h for h in wanted if h not in found]
    for i in range(0, len(todo), batch):
        part = todo[i:i + batch]
        found.update(zip(part, embedder([texts[h] for h in part])))
    fresh = set(todo)
    for chunk in chunks:
        chunk.embedding = list(found[chunk.text_sha256])  # float32 values already: the model's, the graph's, the Parquet's
        chunk.embedding_model = embedder.name
    return sum(c.text_sha256 in fresh for c in chunks)
