"""Embeddings for chunks: an optional hook to a model already on the machine, never a download."""

from __future__ import annotations

import importlib
import math
from typing import Any, Callable, Sequence

from chatetl.rag.chunking import Chunk
from chatetl.settings import Settings

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]


def load_embedder(spec: str | None = None) -> Embedder | None:
    """The embedder named by `CHATETL_EMBEDDER` (`package.module:callable`), or None.

    The callable takes a list of texts and returns one vector per text. It must run a model
    that is already on the machine (e.g. a sentence-transformers model loaded from a local
    folder); chatetl itself never downloads weights. Unset (the default): no embeddings, no
    vector index, and nothing else changes.
    """
    spec = (spec if spec is not None else Settings.from_env().embedder or "").strip()
    if not spec:
        return None
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"CHATETL_EMBEDDER={spec!r}: expected 'package.module:callable'")
    target: Any = importlib.import_module(module)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"CHATETL_EMBEDDER={spec!r} is not callable")
    return target


def embed_chunks(chunks: list[Chunk], embedder: Embedder, batch: int = 64) -> None:
    for i in range(0, len(chunks), batch):
        part = chunks[i:i + batch]
        vectors = embedder([c.text for c in part])
        if len(vectors) != len(part):
            raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(part)} texts")
        for chunk, vec in zip(part, vectors):
            values = [float(x) for x in vec]
            if not values or not all(math.isfinite(x) for x in values):
                raise ValueError("the embedder returned an empty or non-finite vector")
            chunk.embedding = values
