"""Documents, chunks and exports benchmark: chatetl's writers beside the simplest thing that could work.

    .venv/bin/python bench/exports_documents.py [--conversations 500] [--turns 20] [--runs 3] [--profile 5]
    NEO4J_URI=bolt://127.0.0.1:7687 .venv/bin/python bench/exports_documents.py --neo4j

Generated data (never real chats): N ChatGPT-shaped conversations of M turn pairs (bench/chatgpt_shaped.py,
Markdown paragraphs and a code block in every third answer), read through the real reader. It prints, per
step, conversations per second and MB of output per second (the median of --runs), and ratios to the
baselines measured in the same run (the machine is shared: compare ratios, not absolute rates):

- documents: building the Document text and spans, beside the baseline of joining the turns' text;
- chunking (2,000 / 200 characters) on turn and paragraph boundaries, beside the baseline of fixed
  2,000-character windows with a 200 overlap (no boundaries, no message ids);
- exports: two baselines, `json.dumps` of the visible turns ([role, text] lists made from the model) and
  the ceiling, orjson writing plain dicts of the same turns made beforehand (serializing alone); then each
  format through `conversation_files` (the turns chosen, the file name, the bytes), every format in one
  call (the views computed once and shared), the fenced Markdown's render without the read-back check,
  and the targets of issue 11 (chat-export JSON and Markdown >= 50 MB/s);
- the zip of three formats and the training file through the collector (on disk);
- with --profile N, the top N chatetl functions by cumulative and by own share of samples of the
  chat-export JSON and the Markdown exports (py-spy from the venv: `.venv/bin/pip install py-spy`);
- with --neo4j, loading Documents and chunks into the Neo4j of NEO4J_URI (nodes under the `bench-rag`
  platform, deleted before and after) beside a naive one-query-per-chunk MERGE.
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
from typing import Callable

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from chatgpt_shaped import conversation as chatgpt_conversation  # noqa: E402

from chatetl.exports.files import (  # noqa: E402
    conversation_files,
    temporary_collector,
    training_lines,
)
from chatetl.exports.formats import PER_CONVERSATION  # noqa: E402
from chatetl.exports.markdown import _render, markdown_equivalent  # noqa: E402
from chatetl.exports.meta import export_views  # noqa: E402
from chatetl.graph.chunks import load_chunks  # noqa: E402
from chatetl.graph.documents import load_documents  # noqa: E402
from chatetl.rag.chunking import ChunkOptions, chunk_document  # noqa: E402
from chatetl.rag.documents import build_document  # noqa: E402
from chatetl.readers import ReadReport, read_path  # noqa: E402

TARGETS = {"chat-export-json": 50.0, "md": 50.0}  # MB/s of output (issue 11)
RUNS = 3


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


def timed(label: str, items: int, fn: Callable[[], int], *bases: tuple[str, float], runs: int | None = None) -> float:
    """Run `fn` (it returns the bytes it made) `runs` times (--runs); print the median's conv/s, MB/s
    and its ratio to each (name, MB/s) baseline; return the MB/s."""
    times = []
    for _ in range(runs or RUNS):
        start = time.perf_counter()
        out_bytes = fn()
        times.append(time.perf_counter() - start)
    secs = statistics.median(times)
    rate = items / secs if secs else float("inf")
    mbs = out_bytes / secs / 1e6 if secs else 0.0
    ratios = "".join(f"  {mbs / b:6.2f}x {name}" for name, b in bases if b)
    print(f"  {label:<50} {rate:9,.0f} conv/s  {mbs:8.1f} MB/s{ratios}", flush=True)
    return mbs


def main() -> None:
    global RUNS
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=500)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--runs", type=int, default=RUNS, help="timed runs per step; the median is printed")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the top N functions of the JSON and Markdown exports")
    ap.add_argument("--exports-only", action="store_true", help="skip the documents and chunking steps")
    ap.add_argument("--render", metavar="FORMAT", help=argparse.SUPPRESS)  # (what --profile runs under py-spy)
    ap.add_argument("--neo4j", action="store_true")
    args = ap.parse_args()
    RUNS = max(1, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        convs = generate(args.conversations, args.turns, Path(tmp))
    if args.render:
        return render_only(convs, args.render, 20)
    n = len(convs)
    chars = sum(len(m.text) for c in convs for m in c.visible_turns)
    print(f"{n} conversations, {sum(len(c.visible_turns) for c in convs)} visible turns, {chars / 1e6:.1f} M characters; median of {RUNS} runs")

    docs: list = []
    chunks: dict = {}
    if not args.exports_only or args.neo4j:
        docs, chunks = bench_documents(convs)
    bench_exports(convs)
    if args.profile:
        profile_exports(args, args.profile)
    if args.neo4j:
        bench_neo4j(docs, chunks)


def bench_documents(convs: list) -> tuple[list, dict]:
    n = len(convs)
    print("documents")
    base = timed("baseline: join the turns' text", n, lambda: sum(len("\n\n".join(m.text for m in c.visible_turns)) for c in convs))
    docs: list = []

    def documents() -> int:
        docs[:] = [build_document(c) for c in convs]
        return sum(len(d.content) for d in docs)

    timed("chatetl: Document text + spans", n, documents, ("baseline", base))

    print("chunking 2000/200")

    def windows() -> int:
        total = 0
        for d in docs:
            text = d.content
            for i in range(0, max(len(text) - 200, 1), 1800):
                total += len(text[i:i + 2000])
        return total

    base = timed("baseline: fixed windows, no boundaries", n, windows)
    chunks: dict = {}
    opts = ChunkOptions(max_chars=2000, overlap_chars=200)

    def chunking() -> int:
        chunks.clear()
        chunks.update((d.key, chunk_document(d, opts)) for d in docs)
        return sum(len(ch.text) for v in chunks.values() for ch in v)

    timed("chatetl: turns, paragraphs, message ids", n, chunking, ("baseline", base))
    print(f"  {sum(len(v) for v in chunks.values())} chunks")
    return docs, chunks


def bench_exports(convs: list) -> None:
    n = len(convs)
    print("exports (MB of output per second; ratios to the json.dumps baseline and to the orjson ceiling)")
    base = timed("baseline: json.dumps of the visible turns", n,
                 lambda: sum(len(json.dumps([[m.role.value, m.text] for m in c.visible_turns]).encode()) for c in convs))
    prepared = [[{"role": m.role.value, "text": m.text} for m in c.visible_turns] for c in convs]
    ceiling = timed("ceiling: orjson of the same turns as dicts", n,
                    lambda: sum(len(orjson.dumps(turns, option=orjson.OPT_INDENT_2)) for turns in prepared), ("baseline", base))
    bases = (("baseline", base), ("ceiling", ceiling))
    rates = {}
    for fmt in PER_CONVERSATION:
        rates[fmt] = timed(f"chatetl: {fmt}", n, lambda fmt=fmt: sum(len(f.data) for c in convs for f in conversation_files(c, [fmt])), *bases)
    every = tuple(PER_CONVERSATION)
    timed("chatetl: all six formats in one call (views shared)", n,
          lambda: sum(len(f.data) for c in convs for f in conversation_files(c, every)), *bases)
    timed("fenced md without the read-back check", n,
          lambda: sum(len(_render(v, [markdown_equivalent(t.text) for t in v.turns])) for c in convs for v in export_views(c)), *bases)

    def bundle() -> int:
        with temporary_collector(("chat-export-json", "md", "html")) as col:
            for c in convs:
                views = export_views(c)
                col.add(c, conversation_files(c, ("chat-export-json", "md", "html"), views=views), training_lines(c, views=views))
            zpath = col.workdir / "b.zip"
            tpath = col.workdir / "t.jsonl"
            col.write_zip(zpath)
            col.write_training(tpath)
            return os.path.getsize(zpath) + os.path.getsize(tpath)

    timed("chatetl: zip (3 formats) + training file", n, bundle, *bases)
    print("targets (issue 11): " + "; ".join(
        f"{fmt} {rates[fmt]:.1f} MB/s >= {want:.0f}: {'met' if rates[fmt] >= want else 'MISSED'} ({rates[fmt] / ceiling:.2f}x ceiling)"
        for fmt, want in TARGETS.items()))


def profile_exports(args: argparse.Namespace, top: int) -> None:
    """The top chatetl functions, by cumulative and by own share of samples, of each targeted export:
    this script run again under py-spy (from the venv) with --render, its stacks inside `conversation_files`."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        print(f"(no profile: {spy} is not installed; .venv/bin/pip install py-spy)")
        return
    print("profile (py-spy, samples inside conversation_files)")
    for fmt in TARGETS:
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp, "profile.txt")
            cmd = [str(spy), "record", "-r", "500", "-f", "raw", "-o", str(raw), "--", sys.executable, __file__,
                   "--conversations", str(args.conversations), "--turns", str(args.turns), "--render", fmt]
            subprocess.run(cmd, capture_output=True, check=True)
            lines = raw.read_text().splitlines()
        cumulative: dict[str, int] = {}
        own: dict[str, int] = {}
        total = 0
        for line in lines:
            stack, _, n = line.rpartition(" ")
            frames = [f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0].split("/main/")[-1] + ")" for f in stack.split(";") if " (" in f]
            if not any(f.startswith("conversation_files ") for f in frames):
                continue  # generating and reading the chats
            total += int(n)
            for f in set(frames):
                cumulative[f] = cumulative.get(f, 0) + int(n)
            own[frames[-1]] = own.get(frames[-1], 0) + int(n)
        for title, counts in (("cumulative", cumulative), ("self", own)):
            shown = sorted(((c, f) for f, c in counts.items() if "chatetl/" in f and not f.startswith("conversation_files ")), reverse=True)[:top]
            print(f"  {fmt}: top {top} by {title} share of {total} samples: " + "; ".join(f"{100 * c / total:.0f}% {f}" for c, f in shown))


def render_only(convs: list, fmt: str, repeat: int) -> None:
    """What --profile samples: `fmt` rendered for every conversation, `repeat` times."""
    for _ in range(repeat):
        for c in convs:
            conversation_files(c, [fmt])


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

        # one run each: a first load is only a first load once
        base = timed(f"baseline: one query per row ({len(slice_docs)} docs)", len(slice_docs), naive, runs=1)
        wipe()

        def batched() -> int:
            load_documents(driver, props, database=db)
            load_chunks(driver, by_doc, versions, database=db)
            return 0

        timed("chatetl: batched documents + chunks", n, batched, ("baseline", base), runs=1)
        timed("chatetl: the same again (rerun)", n, batched, ("baseline", base), runs=1)
    finally:
        wipe()
        driver.close()


if __name__ == "__main__":
    main()
