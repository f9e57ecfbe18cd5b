"""Documents, chunks and exports benchmark: chatetl's writers beside the simplest thing that could work.

    .venv/bin/python bench/exports_documents.py [--conversations 500] [--turns 20]
    NEO4J_URI=bolt://127.0.0.1:7687 .venv/bin/python bench/exports_documents.py --neo4j

Generated data (never real chats): N ChatGPT-shaped conversations of M turn pairs (bench/chatgpt_shaped.py,
Markdown paragraphs and a code block in every third answer), read through the real reader. It prints, per
step, conversations per second and MB of output per second:

- documents: building the Document text and spans, beside the baseline of joining the turns' text;
- chunking (2,000 / 200 characters) on turn and paragraph boundaries, beside the baseline of fixed
  2,000-character windows with a 200 overlap (no boundaries, no message ids);
- each export format, beside the baseline of `json.dumps` of the visible turns; for the fenced Markdown
  also the render without the read-back check, to show what the check costs;
- the zip of three formats and the training file through the collector (on disk);
- with --neo4j, loading Documents and chunks into the Neo4j of NEO4J_URI (nodes under the `bench-rag`
  platform, deleted before and after) beside a naive one-query-per-chunk MERGE.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from chatgpt_shaped import conversation as chatgpt_conversation  # noqa: E402

from chatetl.exports.files import conversation_files, temporary_collector, training_lines  # noqa: E402
from chatetl.exports.formats import PER_CONVERSATION  # noqa: E402
from chatetl.exports.markdown import _render, markdown_equivalent  # noqa: E402
from chatetl.exports.meta import export_views  # noqa: E402
from chatetl.graph.chunks import load_chunks  # noqa: E402
from chatetl.graph.documents import load_documents  # noqa: E402
from chatetl.rag.chunking import ChunkOptions, chunk_document  # noqa: E402
from chatetl.rag.documents import build_document  # noqa: E402
from chatetl.readers import ReadReport, read_path  # noqa: E402


def generate(n: int, turns: int, workdir: Path) -> list:
    rng = random.Random(11)
    convs = []
    for i in range(n):
        c = chatgpt_conversation(rng, i, turns)
        for node in c["mapping"].values():
            msg = node["message"]
            if msg and msg["author"]["role"] == "assistant":
                parts = msg["content"]["parts"]
                words = parts[0].split()
                paras = [" ".join(words[j:j + 40]) for j in range(0, len(words), 40)]
                if rng.random() < 0.33:
                    paras.append("```python\nfor x in range(3):\n\n    print(x)\n```")
                parts[0] = "\n\n".join(paras)
        c["mapping"] = {k: v for k, v in c["mapping"].items()}
        convs.append(c)
    path = workdir / "conversations.json"
    path.write_text(json.dumps(convs))
    report = ReadReport()
    out = list(read_path(path, report))
    assert not report.errors
    return out


def timed(label: str, items: int, fn: Callable[[], int], baseline: float | None = None) -> float:
    start = time.perf_counter()
    out_bytes = fn()
    secs = time.perf_counter() - start
    rate = items / secs if secs else float("inf")
    ratio = f"  ({rate / baseline:5.2f}x baseline)" if baseline else ""
    print(f"  {label:<44} {rate:10,.0f} conv/s  {out_bytes / secs / 1e6 if secs else 0:8.1f} MB/s{ratio}")
    return rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=500)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--neo4j", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        convs = generate(args.conversations, args.turns, Path(tmp))
    n = len(convs)
    chars = sum(len(m.text) for c in convs for m in c.visible_turns)
    print(f"{n} conversations, {sum(len(c.visible_turns) for c in convs)} visible turns, {chars / 1e6:.1f} M characters")

    print("documents")
    base = timed("baseline: join the turns' text", n, lambda: sum(len("\n\n".join(m.text for m in c.visible_turns)) for c in convs))
    docs = []
    timed("chatetl: Document text + spans", n, lambda: sum(len(d.content) for d in (docs.append(build_document(c)) or docs[-1] for c in convs)), base)

    print("chunking 2000/200")

    def windows() -> int:
        total = 0
        for d in docs:
            text = d.content
            for i in range(0, max(len(text) - 200, 1), 1800):
                total += len(text[i:i + 2000])
        return total

    base = timed("baseline: fixed windows, no boundaries", n, windows)
    chunks = {}
    opts = ChunkOptions(max_chars=2000, overlap_chars=200)
    timed("chatetl: turns, paragraphs, message ids", n, lambda: sum(len(ch.text) for d in docs for ch in chunks.setdefault(d.key, chunk_document(d, opts))), base)
    print(f"  {sum(len(v) for v in chunks.values())} chunks")

    print("exports")
    base = timed("baseline: json.dumps of the visible turns", n, lambda: sum(len(json.dumps([[m.role.value, m.text] for m in c.visible_turns]).encode()) for c in convs))
    for fmt in PER_CONVERSATION:
        timed(f"chatetl: {fmt}", n, lambda fmt=fmt: sum(len(f.data) for c in convs for f in conversation_files(c, [fmt])), base)
    timed("fenced md without the read-back check", n,
          lambda: sum(len(_render(v, [markdown_equivalent(t.text) for t in v.turns])) for c in convs for v in export_views(c)), base)

    def bundle() -> int:
        with temporary_collector(("chat-export-json", "md", "html")) as col:
            for c in convs:
                col.add(c, conversation_files(c, ("chat-export-json", "md", "html")), training_lines(c))
            zpath = col.workdir / "b.zip"
            tpath = col.workdir / "t.jsonl"
            col.write_zip(zpath)
            col.write_training(tpath)
            return os.path.getsize(zpath) + os.path.getsize(tpath)

    timed("chatetl: zip (3 formats) + training file", n, bundle, base)

    if args.neo4j:
        bench_neo4j(docs, chunks)


def bench_neo4j(docs, chunks) -> None:
    from neo4j import GraphDatabase

    from chatetl.graph.connection import neo4j_settings
    from chatetl.settings import Settings, local_environment

    conf = neo4j_settings(Settings.from_env(local_environment()))  # deploy/local.env where the environment has nothing
    db = conf["database"]
    driver = GraphDatabase.driver(conf["uri"], auth=(conf["user"], conf["password"]))

    def wipe() -> None:
        driver.execute_query("MATCH (d:Document) WHERE d.source = 'bench-rag' OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c) DETACH DELETE d, c", database_=db)
        driver.execute_query("MATCH (c:Chunk) WHERE c.source = 'bench-rag' DETACH DELETE c", database_=db)

    props = []
    by_doc = {}
    versions = {}
    for d in docs:
        p = dict(d.props, key="bench-rag:" + d.key, source="bench-rag")
        props.append(p)
        cs = [c.model_copy(update={"id": "bench-rag:" + c.id, "document_key": p["key"], "source": "bench-rag"}) for c in chunks[d.key]]
        by_doc[p["key"]] = cs
        versions[p["key"]] = p["content_sha256"]
    total = sum(len(v) for v in by_doc.values())
    n = len(docs)
    print(f"neo4j ({total} chunks)")
    wipe()
    try:
        slice_docs = props[: max(1, n // 10)]

        def naive() -> int:
            for p in slice_docs:
                driver.execute_query("MERGE (d:Document {key: $key}) SET d += $p", key=p["key"], p=p, database_=db)
                prev = None
                for c in by_doc[p["key"]]:
                    driver.execute_query("MATCH (d:Document {key: $k}) MERGE (c:Chunk {id: $id}) SET c = $row MERGE (d)-[:HAS_CHUNK]->(c)",
                                         k=p["key"], id=c.id, row=c.graph_row(), database_=db)
                    if prev:
                        driver.execute_query("MATCH (a:Chunk {id: $a}), (b:Chunk {id: $b}) MERGE (a)-[:NEXT]->(b)", a=prev, b=c.id, database_=db)
                    prev = c.id
            return 0

        base = timed(f"baseline: one query per row ({len(slice_docs)} docs)", len(slice_docs), naive)
        wipe()

        def batched() -> int:
            load_documents(driver, props, database=db)
            load_chunks(driver, by_doc, versions, database=db)
            return 0

        timed("chatetl: batched documents + chunks", n, batched, base)
        timed("chatetl: the same again (rerun)", n, batched, base)
    finally:
        wipe()
        driver.close()


if __name__ == "__main__":
    main()
