"""Embedding models side by side: chunks per second and memory, on the same chunks.

    .venv/bin/python bench/embedders.py [--models wordllama,minilm] [--runs 5] [--chunks 400] [--baseline DIR]

The chunks are those the documents stage makes of the retrieval bench's two generated sets
(bench/retrieval.py: the long-conversation memory set and the topics set) through the real
chunker (chatetl.rag.documents.build_document, chatetl.rag.chunking.chunk_document), a fixed
sample of `--chunks` of them. Each run is a process of its own (`--one MODEL`), so memory is
the model's alone: it loads the model (chatetl.rag.embeddings.load_embedder), embeds one short
text (the load), then every chunk in the pipeline's batches (chatetl.rag.embeddings.embed_chunks),
and prints the seconds and the process's resident memory (after the load, and its peak). Runs
alternate between the models; the table gives the medians (and the spread) of `--runs` runs each.
`--baseline DIR`: another checkout of chatetl (e.g. `git archive COMMIT | tar -x -C DIR`) whose
`chatetl` package this script also measures, its runs alternating with this checkout's; the
table has a row per checkout and model, and each model's vectors are compared with the
baseline's (cosine of the same chunk's two vectors). No Neo4j is needed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CODE = "EMBEDDERS_BENCH_CODE"  # the checkout whose chatetl a run measures (a --baseline's), this one's when unset
ROOT = Path(os.environ.get(CODE) or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT / "bench"))  # its retrieval.py, which puts its checkout first on the path too
sys.path.insert(0, str(ROOT))

from retrieval import corpus, memory_corpus

from chatetl.rag.chunking import Chunk, chunk_document
from chatetl.rag.documents import build_document
from chatetl.rag.embeddings import embed_chunks, load_embedder


def sample_chunks(count: int, seed: int = 11) -> list[Chunk]:
    """`count` chunks drawn from both sets' documents (half each), the same for every model and run."""
    rng = random.Random(seed)
    memory, _ = memory_corpus(random.Random(seed))
    topics, _ = corpus(random.Random(seed))
    picked: list[Chunk] = []
    for convs in (memory, topics):
        chunks = [c for conv in convs for c in chunk_document(build_document(conv))]
        picked += rng.sample(chunks, min(count // 2, len(chunks)))
    return picked


def resident_mib() -> float:
    """This process's resident memory now (Linux's /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def one(model: str, count: int, vectors: str | None = None) -> dict[str, Any]:
    """One run in this process: load, then embed the sample (its vectors saved to `vectors`, a .npy file)."""
    chunks = sample_chunks(count)
    before = resident_mib()
    start = time.perf_counter()
    embedder = load_embedder(model)
    if embedder is None:
        raise SystemExit("embeddings are off (CHATETL_EMBEDDINGS)")
    embedder(["load the model"])
    loaded = time.perf_counter() - start
    after_load = resident_mib()
    start = time.perf_counter()
    embedded = embed_chunks(chunks, embedder)
    seconds = time.perf_counter() - start
    if vectors:
        import numpy as np

        np.save(vectors, np.asarray([c.embedding for c in chunks], dtype=np.float32))
    return {"model": embedder.name, "dimensions": embedder.dimensions, "chunks": embedded,
            "characters": sum(len(c.text) for c in chunks), "load_s": loaded, "embed_s": seconds,
            "loaded_mib": after_load - before, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="wordllama,minilm", help="CHATETL_EMBEDDER names, comma-separated")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=400)
    parser.add_argument("--baseline", default=None, help="another checkout's folder: its chatetl measured too, alternating")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--vectors", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.chunks, args.vectors)))
        return
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    codes = {"this checkout": None} if args.baseline is None else {"baseline": str(Path(args.baseline).resolve()), "this checkout": None}
    cases = [(code, model) for model in models for code in codes]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.runs):
            for code, model in cases if r % 2 == 0 else cases[::-1]:
                vectors = str(Path(folder, f"{code}-{model}.npy"))
                env = {k: v for k, v in os.environ.items() if k != CODE}
                if codes[code] is not None:
                    env[CODE] = str(codes[code])
                out = subprocess.run([sys.executable, __file__, "--one", model, "--chunks", str(args.chunks), "--vectors", vectors],
                                     check=True, capture_output=True, text=True, env=env).stdout
                runs[code, model].append(json.loads(out.strip().splitlines()[-1]))
                row = runs[code, model][-1]
                print(f"run {r + 1} {code} {model}: {row['chunks'] / row['embed_s']:.1f} chunks/s, peak {row['peak_mib']:.0f} MiB", flush=True)
        agreement = {model: _agreement(Path(folder, f"baseline-{model}.npy"), Path(folder, f"this checkout-{model}.npy"))
                     for model in models if args.baseline is not None}
    first = runs[cases[0]][0]
    print(f"\n{first['chunks']} chunks ({first['characters'] / first['chunks']:,.0f} characters on average), "
          f"{args.runs} runs per model{' and checkout' if args.baseline else ''}, alternating; medians (min-max)\n")
    print("| code | model | dimensions | chunks/s | load s | RSS growth once loaded MiB | peak RSS of the process MiB |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")

    def cell(values: list[float], fmt: str = ".1f") -> str:
        return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"

    for code, model in cases:
        rows = runs[code, model]
        print(f"| {code} | {model} ({rows[0]['model']}) | {rows[0]['dimensions']} | {cell([r['chunks'] / r['embed_s'] for r in rows])} "
              f"| {cell([r['load_s'] for r in rows], '.2f')} | {cell([r['loaded_mib'] for r in rows], '.0f')} "
              f"| {cell([r['peak_mib'] for r in rows], '.0f')} |")
    for model, (low, middle, same) in agreement.items():
        print(f"\n{model}, this checkout's vectors against the baseline's: cosine min {low:.4f}, median {middle:.4f}; "
              f"{same:.0%} of the chunks' nearest other chunk unchanged")


def _agreement(baseline: Path, current: Path) -> tuple[float, float, float]:
    """The cosine of each chunk's two vectors (min, median), and how often a chunk's nearest other chunk is the same."""
    import numpy as np

    a, b = np.load(baseline), np.load(current)
    if a.shape != b.shape:
        raise SystemExit(f"the checkouts cut or embed the sample differently: {a.shape} vectors against {b.shape}")
    cosine = (a * b).sum(axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    near_a, near_b = a @ a.T, b @ b.T
    np.fill_diagonal(near_a, -np.inf)
    np.fill_diagonal(near_b, -np.inf)
    return float(cosine.min()), float(np.median(cosine)), float((near_a.argmax(axis=1) == near_b.argmax(axis=1)).mean())


if __name__ == "__main__":
    main()
