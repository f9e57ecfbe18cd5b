"""How long the RAG stage holds the Neo4j pool slot: one step that cuts, embeds and writes the graph (before)
beside rag_files (cuts and embeds into rag/, no pool) then documents (the graph from rag/, the pool).

    NEO4J_URI=bolt://127.0.0.1:7687 .venv/bin/python bench/documents_pool.py [--mb 4] [--runs 5]

Generated data (never real chats): a ChatGPT-shaped conversations.json of about --mb MB (bench/chatgpt_shaped.py)
normalized into a local-folder bucket, its graph loaded once (Conversations and Messages). Each run starts from
no rag/ files and no Document or Chunk node, and times, alternating the two ways:
- before: `write_partition_documents` with the graph written at once (what the documents step did in the pool);
- after: `write_day_files` (rag_files, outside the pool), then `load_day_files` (documents, in the pool);
then the same again on the unchanged day (a rerun). It prints the median of --runs of each, and the share of the
stage's time the pool is held. The built-in embedding model, as the assets use it. Nodes of other data in the
database are left alone only if they are not Documents or Chunks: use a database of its own.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from chatgpt_shaped import write_chatgpt_file

from chatetl.graph.connection import neo4j_settings, open_driver
from chatetl.graph.load import load_graph_partition
from chatetl.ingest.index import partition_of
from chatetl.ingest.partition import ingest_partition
from chatetl.layout import RAG_CHUNKS_PREFIX, RAG_DOCUMENTS_PREFIX, RAG_EMBEDDINGS_PREFIX
from chatetl.rag.embeddings import load_embedder
from chatetl.rag.partition import write_partition_documents
from chatetl.rag.retract import load_day_files, write_day_files
from chatetl.settings import Settings
from chatetl.storage import LocalObjectStore


def _clear(store: LocalObjectStore, driver, database: str | None) -> None:
    for prefix in (RAG_DOCUMENTS_PREFIX, RAG_CHUNKS_PREFIX, RAG_EMBEDDINGS_PREFIX):
        store.delete_prefix(prefix)
    with driver.session(database=database) as session:
        session.run("MATCH (n) WHERE n:Document OR n:Chunk CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS").consume()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    database = neo4j_settings()["database"]
    driver = open_driver()
    embedder = load_embedder(settings=Settings.from_env({}))
    with tempfile.TemporaryDirectory(prefix="bench-documents-pool-") as tmp:
        store = LocalObjectStore(Path(tmp, "bucket"))
        source = Path(tmp, "conversations.json")
        conversations, size = write_chatgpt_file(source, int(args.mb * 1_000_000))
        info = store.put_bytes("raw/bench/conversations.json", source.read_bytes())
        day = partition_of(info)
        with driver.session(database=database) as session:
            session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS").consume()
        ingest_partition(store, day, [info])
        load_graph_partition(store, driver, day, database)
        print(f"{conversations} conversations, {size / 1e6:.1f} MB; {args.runs} alternating runs, medians")

        times: dict[str, list[float]] = {k: [] for k in ("before", "files", "graph", "before_rerun", "files_rerun", "graph_rerun")}

        def before(suffix: str) -> None:
            t = time.perf_counter()
            write_partition_documents(store, driver, day, database=database, embedder=embedder)
            times["before" + suffix].append(time.perf_counter() - t)

        def after(suffix: str) -> None:
            t = time.perf_counter()
            write_day_files(store, driver, day, database=database, embedder=embedder)
            t2 = time.perf_counter()
            load_day_files(store, driver, day, database=database)
            times["files" + suffix].append(t2 - t)
            times["graph" + suffix].append(time.perf_counter() - t2)

        for run in range(args.runs):
            for way in ((before, after) if run % 2 == 0 else (after, before)):
                _clear(store, driver, database)
                way("")
                way("_rerun")
        _clear(store, driver, database)
    driver.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    print("| | before: pool held (one step) | after: rag_files (no pool) | after: documents (pool held) | pool held, after / before |")
    print("| --- | --- | --- | --- | --- |")
    for label, suffix in (("first run of the day", ""), ("unchanged rerun", "_rerun")):
        b, f, g = med["before" + suffix], med["files" + suffix], med["graph" + suffix]
        print(f"| {label} | {b:.2f} s | {f:.2f} s | {g:.2f} s | {g / b:.2f} |")


if __name__ == "__main__":
    main()
