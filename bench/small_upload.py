"""A small upload on a big day: what its run spends in the graph, rag_files, documents and exports, beside a baseline.

    .venv/bin/python deploy/local_env.py NEO4J_URI=bolt://127.0.0.1:7687 CHATETL_S3_ENDPOINT_URL=http://127.0.0.1:9000 \\
        -- .venv/bin/python bench/small_upload.py --baseline ../base-worktree [--mb 60] [--parts 6] [--small-mb 1] [--runs 5] [--s3]
        [--state FILE [--resume]]

The baseline is another checkout of chatetl (a `git worktree` of the commit to compare with), run from this
venv with its tree first on PYTHONPATH. Each side gets its own local bucket and its own generated data (another
seed: no text, id or vector in common), in the one Neo4j of NEO4J_URI (emptied first). A day is first loaded
with `--mb` MB of ChatGPT-shaped JSON in `--parts` uploads (one run: its first run), then, `--runs` times, a
small upload of `--small-mb` MB is added and the day's run timed again, the two sides alternating (with --s3, a bucket each on the S3 server of CHATETL_S3_ENDPOINT_URL, emptied
first; else a local folder). Every run is
a process of its own doing what the assets do: the graph (`load_graph_partition`), rag_files
(`write_day_files`, the built-in embedder), documents (`load_day_files`) and exports (`write_day_exports`, then
the archive page). "searchable" is graph + rag_files + documents: from the upload's normalized tables to its
chunks in the graph's indexes (normalizing the upload itself is not counted).

The ceiling row is the physical floor of a small upload's outputs: its bytes (`--small-mb` MB) PUT once to
the store and read back once, timed beside each small run. With --s3, `--state FILE` keeps the first runs'
figures (the buckets and the graph stay), and `--resume` adds more small uploads to those days without
loading them again, e.g. to measure a change of the small runs on a day too big to load twice.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

DAY = "2026-05-01"
STAGES = ("graph", "rag_files", "documents", "exports")


def open_store(root: str) -> Any:
    """`s3://bucket` (on CHATETL_S3_ENDPOINT_URL) or a local folder."""
    from chatetl.storage import LocalObjectStore, S3ObjectStore, s3_client

    if root.startswith("s3://"):
        return S3ObjectStore(s3_client(os.environ.get("CHATETL_S3_ENDPOINT_URL")), root.removeprefix("s3://"))
    return LocalObjectStore(root)


def step(root: str, uploads: list[tuple[str, float, int]]) -> dict[str, float]:
    """Uploads (id, MB, seed) put as normalized tables into the bucket at `root`, then the day's run, timed."""
    from chatgpt_shaped import write_chatgpt_file

    from chatetl.exports.archive import write_archive
    from chatetl.exports.partition import write_day_exports
    from chatetl.graph.connection import open_driver
    from chatetl.graph.load import load_graph_partition
    from chatetl.layout import table_key
    from chatetl.rag.embeddings import load_embedder
    from chatetl.rag.retract import load_day_files, write_day_files
    from chatetl.readers import ReadReport, read_path
    from chatetl.settings import Settings
    from chatetl.tables import TableWriter

    store = open_store(root)
    for uid, mb, seed in uploads:
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp, "conversations.json")
            write_chatgpt_file(raw, int(mb * 1e6), seed=seed)
            paths = Path(tmp, "c.parquet"), Path(tmp, "m.parquet")
            report = ReadReport()
            with TableWriter(*paths) as writer:
                for conv in read_path(raw, report):
                    writer.add(conv, upload_key=f"raw/{uid}.json")
            store.put_file(table_key("conversations", DAY, uid), paths[0])
            store.put_file(table_key("messages", DAY, uid), paths[1])
    driver = open_driver()
    database = os.environ.get("NEO4J_DATABASE") or None
    embedder = load_embedder(settings=Settings.from_env({}))
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    load_graph_partition(store, driver, DAY, database)
    seconds["graph"] = time.perf_counter() - start
    start = time.perf_counter()
    write_day_files(store, driver, DAY, database=database, embedder=embedder)
    seconds["rag_files"] = time.perf_counter() - start
    start = time.perf_counter()
    load_day_files(store, driver, DAY, database=database)
    seconds["documents"] = time.perf_counter() - start
    start = time.perf_counter()
    write_day_exports(store, DAY, archive_page=False)
    write_archive(store)
    seconds["exports"] = time.perf_counter() - start
    seconds["searchable"] = seconds["graph"] + seconds["rag_files"] + seconds["documents"]
    driver.close()
    return seconds


def run_side(tree: Path | None, root: str, uploads: list[tuple[str, float, int]]) -> dict[str, float]:
    """`step` in a process of its own, with `tree`'s chatetl first on the path (None: this checkout's)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    spec = json.dumps({"root": str(root), "uploads": uploads})
    out = subprocess.run([sys.executable, __file__, "--step", spec], env=env, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def ceiling(root: str, mb: float) -> float:
    """Seconds to PUT `mb` MB to the store at `root` and GET them back once: what writing a small upload's bytes costs at least."""
    store = open_store(root)
    data = os.urandom(int(mb * 1e6))
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp, "src"), Path(tmp, "dst")
        src.write_bytes(data)
        start = time.perf_counter()
        store.put_file("bench-ceiling/object", src)
        store.download("bench-ceiling/object", dst)
        seconds = time.perf_counter() - start
    store.delete_prefix("bench-ceiling/")
    return seconds


def wipe_graph() -> None:
    from chatetl.graph.connection import open_driver

    driver = open_driver()
    with driver.session(database=os.environ.get("NEO4J_DATABASE") or None) as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    driver.close()


def empty_buckets(roots: list[str]) -> None:
    from chatetl.storage import s3_client

    client = s3_client(os.environ.get("CHATETL_S3_ENDPOINT_URL"))
    for root in roots:
        bucket = root.removeprefix("s3://")
        try:
            client.create_bucket(Bucket=bucket)
        except client.exceptions.ClientError:
            pass  # (there already)
        open_store(root).delete_prefix("")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare with")
    parser.add_argument(
        "--this", type=Path, help="a checkout of the code measured (default: this one; a worktree keeps it fixed while you edit)"
    )
    parser.add_argument("--mb", type=float, default=60.0, help="the day's first load, in MB of ChatGPT JSON")
    parser.add_argument("--parts", type=int, default=6, help="uploads the first load comes in")
    parser.add_argument("--small-mb", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--s3", action="store_true", help="buckets on CHATETL_S3_ENDPOINT_URL, not local folders")
    parser.add_argument("--state", help="a JSON file keeping the first runs' figures and the small uploads done")
    parser.add_argument("--resume", action="store_true", help="add small uploads to the days of --state, without loading them again")
    parser.add_argument("--step", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        spec = json.loads(args.step)
        print(json.dumps(step(spec["root"], [tuple(u) for u in spec["uploads"]])))
        return
    sides: dict[str, Path | None] = {"baseline": args.baseline, "this": args.this} if args.baseline else {"this": args.this}
    state_file = Path(args.state) if args.state else None
    with tempfile.TemporaryDirectory(prefix="chatetl-small-upload-") as tmp:
        roots = {name: f"s3://chatetl-bench-{name}" if args.s3 else str(Path(tmp, name)) for name in sides}
        if args.resume:
            assert state_file is not None and args.s3, "--resume needs --state and --s3 (the days stay in the buckets)"
            state = json.loads(state_file.read_text())
            first: dict[str, dict[str, float]] = state["first"]
            done = int(state["small_uploads"])
        else:
            wipe_graph()
            if args.s3:
                empty_buckets(list(roots.values()))
            first = {}
            for n, (name, tree) in enumerate(sides.items()):
                big = [(f"big-{i}", args.mb / args.parts, 1000 * (n + 1) + i) for i in range(args.parts)]
                first[name] = run_side(tree, roots[name], big)
                print(f"{name}: first run {json.dumps({k: round(v, 2) for k, v in first[name].items()})}", flush=True)
            done = 0
        small: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
        floor: list[float] = []
        for k in range(done, done + args.runs):
            for n, (name, tree) in enumerate(sides.items()):
                secs = run_side(tree, roots[name], [(f"small-{k}", args.small_mb, 5000 * (n + 1) + k)])
                small[name].append(secs)
                print(f"{name}: small upload {k + 1} {json.dumps({s: round(v, 2) for s, v in secs.items()})}", flush=True)
            floor.append(ceiling(next(iter(roots.values())), args.small_mb))
            if state_file is not None:
                state_file.write_text(json.dumps({"first": first, "small_uploads": k + 1}))
    print(f"\nday {args.mb:g} MB in {args.parts} uploads, then {args.runs} uploads of {args.small_mb:g} MB (median)")
    print(f"{'side':<10}{'stage':<12}{'first run s':>12}{'small s':>10}{'ratio':>8}")
    for name in sides:
        for stage in (*STAGES, "searchable"):
            median = statistics.median(s[stage] for s in small[name])
            print(f"{name:<10}{stage:<12}{first[name][stage]:>12.2f}{median:>10.2f}{median / first[name][stage]:>8.1%}")
        both = statistics.median(s["rag_files"] + s["documents"] + s["exports"] for s in small[name])
        base = first[name]["rag_files"] + first[name]["documents"] + first[name]["exports"]
        print(f"{name:<10}{'exp+rag+doc':<12}{base:>12.2f}{both:>10.2f}{both / base:>8.1%}")
    print(f"{'ceiling':<10}{'put+get':<12}{'':>12}{statistics.median(floor):>10.2f}   ({args.small_mb:g} MB PUT and GET once)")


if __name__ == "__main__":
    main()
