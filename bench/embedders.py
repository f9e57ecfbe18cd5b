"""Embedding models side by side: chunks per second and memory, on the same chunks.

    .venv/bin/python bench/embedders.py [--models wordllama,minilm] [--runs 5] [--chunks 400]

The chunks are those the documents stage makes of the retrieval bench's two generated sets
(bench/retrieval.py: the long-conversation memory set and the topics set) through the real
chunker (chatetl.rag.documents.build_document, chatetl.rag.chunking.chunk_document), a fixed
sample of `--chunks` of them. Each run is a process of its own (`--one MODEL`), so memory is
the model's alone: it loads the model (chatetl.rag.embeddings.load_embedder), embeds one short
text (the load), then every chunk in the pipeline's batches (chatetl.rag.embeddings.embed_chunks),
and prints the seconds and the process's resident memory (after the load, and its peak). Runs
alternate between the models; the table gives the medians (and the spread) of `--runs` runs each.
No Neo4j is needed.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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


def one(model: str, count: int) -> dict[str, Any]:
    """One run in this process: load, then embed the sample."""
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
    return {"model": embedder.name, "dimensions": embedder.dimensions, "chunks": embedded,
            "characters": sum(len(c.text) for c in chunks), "load_s": loaded, "embed_s": seconds,
            "loaded_mib": after_load - before, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="wordllama,minilm", help="CHATETL_EMBEDDER names, comma-separated")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=400)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.chunks)))
        return
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in models}
    for r in range(args.runs):
        for model in models if r % 2 == 0 else models[::-1]:
            out = subprocess.run([sys.executable, __file__, "--one", model, "--chunks", str(args.chunks)],
                                 check=True, capture_output=True, text=True).stdout
            runs[model].append(json.loads(out.strip().splitlines()[-1]))
            row = runs[model][-1]
            print(f"run {r + 1} {model}: {row['chunks'] / row['embed_s']:.1f} chunks/s, peak {row['peak_mib']:.0f} MiB", flush=True)
    first = runs[models[0]][0]
    print(f"\n{first['chunks']} chunks ({first['characters'] / first['chunks']:,.0f} characters on average), "
          f"{args.runs} runs per model, alternating; medians (min-max)\n")
    print("| model | dimensions | chunks/s | load s | RSS growth once loaded MiB | peak RSS of the process MiB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for model in models:
        rows = runs[model]

        def cell(values: list[float], fmt: str = ".1f") -> str:
            return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"

        print(f"| {model} ({rows[0]['model']}) | {rows[0]['dimensions']} | {cell([r['chunks'] / r['embed_s'] for r in rows])} "
              f"| {cell([r['load_s'] for r in rows], '.2f')} | {cell([r['loaded_mib'] for r in rows], '.0f')} "
              f"| {cell([r['peak_mib'] for r in rows], '.0f')} |")


if __name__ == "__main__":
    main()
