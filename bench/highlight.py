"""The nearest-sentence highlight of search (chatetl.search._nearest_sentences): its time per search, and what it picks.

    .venv/bin/python bench/highlight.py [--models wordllama,minilm] [--runs 5] [--queries 12] [--quality 400] [--baseline DIR]

A hit without the query's words shows the sentence of its chunk nearest the query by meaning. The
hits are made of the retrieval bench's two generated sets (bench/retrieval.py: the topics set and
the memory set), cut by the real chunker (chatetl.rag.documents.build_document,
chatetl.rag.chunking.chunk_document): per question, the chunk that answers it and the nine
conversations' chunks nearest the question by the built-in model (one per conversation, as search
shows them), each with the query's words marked as search marks them (`word_matches`). No Neo4j is
needed: the ranking is not what is measured, and the hits are the same for every checkout and model.

Each run is a process of its own (`--one`), for one checkout and one index model (`CHATETL_EMBEDDER`:
`wordllama`, `minilm`): it loads the model and embeds the questions (the search's own query vectors,
not timed), then times the highlight of each question's ten hits; the first question's time, which
loads what the highlight needs beyond the index's model, is given apart (and that question is timed
again with the rest). Runs alternate between the checkouts and models; the table gives the medians
over `--runs` runs of each run's mean time a search, and of its slowest search.
`--baseline DIR`: another checkout of chatetl (`git archive COMMIT | tar -x -C DIR`), measured too.

What is picked: for `--quality` questions (half each set), the answering chunk alone, unless it
holds the question's words: the sentence chosen, whether it names what the question is about (the
topics set's thing, the memory set's subject as the turn says it), and how often each checkout and
model chose the same sentence as the baseline with minilm (the highlight by the index's model).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CODE = "HIGHLIGHT_BENCH_CODE"  # the checkout whose chatetl a run measures (a --baseline's), this one's when unset
ROOT = Path(os.environ.get(CODE) or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))

HITS = 10


def questions(count: int, seed: int = 13) -> list[dict[str, Any]]:
    """`count` questions, half of each set, each with its hits: the answering chunk first, then the nine nearest
    other conversations' chunks by the built-in model (`about`: what a sensible sentence names)."""
    import numpy as np

    from chatetl.rag.chunking import chunk_document
    from chatetl.rag.documents import build_document
    from chatetl.rag.embeddings import builtin_embedder

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import retrieval  # (this checkout's generated sets: the parent's, never a run's)

    rng = random.Random(seed)
    made = random.Random(13)  # the retrieval bench's own sets and questions (its default seed)
    topics, facts = retrieval.corpus(made)
    topic_questions = retrieval.make_queries(facts, 300, made)
    memory, memory_questions = retrieval.memory_corpus(random.Random(13))
    thing = {f["key"]: f["thing"] for f in facts}
    out: list[dict[str, Any]] = []
    for convs, asked, set_name in ((topics, topic_questions, "topics"), (memory, memory_questions, "memory")):
        chunks = [c for conv in convs for c in chunk_document(build_document(conv))]
        model = builtin_embedder()
        vectors = np.asarray(model([c.text for c in chunks]))
        for q in rng.sample(asked, count - count // 2 if set_name == "topics" else count // 2):
            if set_name == "topics":
                first = next(m.message_id for m in next(c for c in convs if c.key == q["key"]).messages if m.role == "user"
                             and thing[q["key"]] in m.text)
                about = thing[q["key"]]
            else:
                first = q["message_id"]
                turn = next(m.text for c in convs if c.key == q["key"] for m in c.messages if m.message_id == first)
                about = max((s for s, _ in retrieval.SUBJECTS if s in turn), key=len)
            answering = next(c for c in chunks if first in c.message_ids)
            nearest = np.argsort(-(vectors @ np.asarray(model([q["text"]])[0])), kind="stable")
            hits, seen = [answering], {answering.document_key}
            for i in nearest:
                if len(hits) == HITS:
                    break
                if chunks[i].document_key not in seen:
                    seen.add(chunks[i].document_key)
                    hits.append(chunks[i])
            out.append({"set": set_name, "text": q["text"], "about": about,
                        "hits": [{"text": c.text, "key": c.document_key, "chunk_id": c.id} for c in hits]})
    return out


def one(model: str, path: str, answering_only: bool) -> dict[str, Any]:
    """One run in this process: each question's highlight timed (the answering hit alone: `answering_only`)."""
    import inspect

    from chatetl import search
    from chatetl.rag.embeddings import load_embedder

    embedder = load_embedder(model)
    if embedder is None:
        raise SystemExit("embeddings are off (CHATETL_EMBEDDINGS)")
    embedder(["load the model"])
    with_query = "query" in inspect.signature(search._nearest_sentences).parameters  # (736059c's takes the query's vector alone)
    asked = json.loads(Path(path).read_text())
    seconds, picked, sentences = [], [], []
    for q in asked[:1] + asked:  # the first question twice: in a fresh process (what the highlight loads), then as the rest
        terms = search.query_terms(q["text"])
        hits = []
        for rank, h in enumerate(q["hits"][:1] if answering_only else q["hits"], start=1):
            hit = search.Hit(rank=rank, score=1.0, text_rank=None, vector_rank=rank, conversation={"key": h["key"]},
                             chunk_id=h["chunk_id"], position=0, char_start=0, char_end=len(h["text"]), text=h["text"],
                             message_ids=[], matches=search.word_matches(h["text"], terms, any_form=True))
            hit.matched = "words" if hit.matches else None
            hits.append(hit)
        query_vector = embedder([q["text"]])[0]  # (the search's own, for its vector list)
        sentences.append(sum(len(search.sentences(h.text)) for h in hits if not h.matches))
        start = time.perf_counter()
        if with_query:
            search._nearest_sentences(hits, q["text"], query_vector, embedder)
        else:
            search._nearest_sentences(hits, query_vector, embedder)
        seconds.append(time.perf_counter() - start)
        picked.append([h.text[h.matches[0][0]:h.matches[0][1]] if h.matched == "sentence" else None for h in hits])
    return {"model": embedder.name, "first": seconds[0], "seconds": seconds[1:], "picked": picked[1:], "sentences": sentences[1:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="wordllama,minilm", help="CHATETL_EMBEDDER names, comma-separated")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=12, help="questions timed in each run (half of each set)")
    parser.add_argument("--quality", type=int, default=400, help="questions whose answering hit's sentence is compared")
    parser.add_argument("--baseline", default=None, help="another checkout's folder: its chatetl measured too, alternating")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--hits", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--answering-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.hits, args.answering_only)))
        return
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    codes = {"this checkout": None} if args.baseline is None else {"baseline": str(Path(args.baseline).resolve()), "this checkout": None}
    cases = [(code, model) for model in models for code in codes]
    with tempfile.TemporaryDirectory() as folder:
        timed, compared = Path(folder, "timed.json"), Path(folder, "compared.json")
        timed.write_text(json.dumps(questions(args.queries, seed=13)))
        quality = questions(args.quality, seed=17)
        compared.write_text(json.dumps(quality))

        def run(code: str, model: str, path: Path, answering_only: bool = False) -> dict[str, Any]:
            env = {k: v for k, v in os.environ.items() if k != CODE}
            if codes[code] is not None:
                env[CODE] = str(codes[code])
            command = [sys.executable, __file__, "--one", model, "--hits", str(path)] + (["--answering-only"] if answering_only else [])
            out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
            result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
            return result

        runs: dict[tuple[str, str], list[dict[str, Any]]] = {case: [] for case in cases}
        for r in range(args.runs):
            for code, model in cases if r % 2 == 0 else cases[::-1]:
                row = run(code, model, timed)
                runs[code, model].append(row)
                print(f"run {r + 1} {code} {model}: {statistics.fmean(row['seconds']):.3f} s a search "
                      f"(the first of the process {row['first']:.3f} s)", flush=True)
        chosen = {case: run(*case, compared, answering_only=True)["picked"] for case in cases}
    first = runs[cases[0]][0]
    print(f"\n{args.queries} questions of 10 hits, {statistics.fmean(first['sentences']):.0f} sentences a search in the hits "
          f"without the query's words ({min(first['sentences'])}-{max(first['sentences'])}); {args.runs} runs per model and "
          f"checkout, alternating; medians (min-max) over the runs of a run's mean a search\n")
    print("| code | index model | highlight, a search (s) | the slowest search (s) | the first search of a process (s) |")
    print("| --- | --- | ---: | ---: | ---: |")

    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"

    for code, model in cases:
        rows = runs[code, model]
        print(f"| {code} | {model} | {cell([statistics.fmean(r['seconds']) for r in rows])} | {cell([max(r['seconds']) for r in rows])} "
              f"| {cell([r['first'] for r in rows])} |")
    reference = ("baseline", "minilm") if ("baseline", "minilm") in chosen else cases[0]
    shown = [i for i, q in enumerate(quality) if chosen[reference][i][0] is not None]
    print(f"\n{len(quality)} questions' answering hits, {len(shown)} without the question's words; the sentence chosen:\n")
    print(f"| code | index model | names what the question is about | the same as {' with '.join(reference)} |")
    print("| --- | --- | ---: | ---: |")
    for case in cases:
        names = sum(quality[i]["about"].lower() in (chosen[case][i][0] or "").lower() for i in shown)
        same = sum(chosen[case][i][0] == chosen[reference][i][0] for i in shown)
        print(f"| {case[0]} | {case[1]} | {names} of {len(shown)} | {same} of {len(shown)} |")
    for i in shown[:4]:
        print(f"\n{quality[i]['text']!r} ({quality[i]['set']}):")
        for case in cases:
            print(f"  {case[0]}, {case[1]}: {chosen[case][i][0]!r}")


if __name__ == "__main__":
    main()
