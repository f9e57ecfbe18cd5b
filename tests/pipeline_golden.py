"""The pipeline golden files: every stage run on fixed inputs, what it wrote recorded as data.

    NEO4J_URI=bolt://127.0.0.1:17687 CHATETL_S3_ENDPOINT_URL=http://127.0.0.1:18333 \\
        .venv/bin/python tests/pipeline_golden.py        # (re)writes tests/golden/pipeline/

It runs on the test services (the ports of tests/conftest.py, or the ones exported; started when
they do not answer) and empties their Neo4j database, as the suite does. Run it only when an output
changes on purpose (a reader, the tables, the graph, the documents or an export format); a refactor
must leave the files as they are: tests/test_pipeline_golden.py runs the same steps and compares.

The steps, as the demo's job runs them (raw_uploads' upload index, normalized, graph, documents,
exports and the archive page), on a local-folder bucket and the real Neo4j, day by day:
- `samples`: the built-in sample uploads (chatetl.samples, what `make demo` uploads);
- `platforms`: the generated files of bench/platforms and bench/chatgpt_shaped at a small size
  (seeded generators; their zips packed again with fixed member times, the only bytes that vary);
- `damaged`: files the readers refuse in part (records that are not conversations, invalid JSON,
  nesting too deep, a file cut short, a zip member with a bad CRC, an unknown format, an empty
  file), a field no reader knows (drift), two states of one conversation in one upload, UTF-16;
- `changes`: the ChatGPT sample zip uploaded again with one conversation continued (its outputs
  move from the `samples` day), an older state of that conversation in a new upload, one upload deleted;
- `rerun`: every day again: the ledger skips every upload, the deletion is retracted, and what the
  other stages still write (a conversation loaded in deep mode on one day and not on another ...).
Then the command line on the same inputs (all four days' files in one folder): `chatetl normalize`
with one and two processes, `chatetl export` once per format and once with everything in.

Recorded (what tests/test_pipeline_golden.py compares):
- `inputs.json`: every input's sha256 (a generator or zlib that writes other bytes is told first);
- `steps.jsonl.xz`: per step, each stage's report (counts, errors, drift, skips, keys written), the
  bucket's changes (every key under normalized/, quarantine/, rag/, exports/ and state/ with its
  bytes' sha256 and its canonical digest) and the graph's (every node with its labels and
  properties, every relationship with its type, ends by key and properties), and the graph's schema;
- `tables.jsonl.xz`: every Parquet file's schema, layout (row groups, codecs, encodings) and every
  row, row order included, values as JSON (times in ISO 8601, bytes in base64);
- `texts.jsonl.xz`: the text of every JSON object under state/ and quarantine/ (diffable);
- `cli.jsonl.xz`: each command's arguments, exit code, stdout, stderr, and its files' sha256 (with two
  processes, the part files depend on the workers' timing: each table's parts, read in order, as one).

Left out, because they differ from run to run and say nothing of the code: the ledger's
`processed_at` (the wall clock; its output ETags are checked to be the outputs' MD5 instead, its
`parser` to be parser_fingerprint(), a digest of the readers' source that any edit changes), the
reports' seconds (`seconds`, `embedding_seconds`), the heap Neo4j held for the largest transaction
(`largest_transaction_bytes`), the server's count of what a load wrote (`graph_updates`: with the
load's two sessions it was seen to vary by a few percent between runs of the same code; the graph
itself is compared, node by node) and the bytes an upload's tables took (`bytes_written`, which the
bucket's path changes). The local bucket's absolute path, which the readers write into
`source_file` (conversations tables, the graph's `source_files` / `state_file`, error places), is
replaced by `<store>` in every canonical form; a file holding it has no byte digest (its canonical
digest stands), which leaves out the bucket's conversations tables: the command line's (relative
paths) have theirs. A chunk's embedding is its float32 bytes' sha256 (exact on the pinned numpy;
the rag/embeddings Parquet bytes are compared too).

Import paths the refactors may move are the block below "the library's doors": update them there.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
GOLDEN = TESTS / "golden" / "pipeline"
for _path in (str(TESTS), str(REPO)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from golden_data import (
    Canon,
    content_digest,
    dumps,
    parquet_record,
    read_jsonl_xz,
    services_driver,
    sha256,
    table_rows,
    write_jsonl_xz,
)

# ---- the library's doors: every chatetl name the harness calls (after a move, update them here) ----
from chatetl.cli import main as cli
from chatetl.exports.archive import write_archive
from chatetl.exports.partition import ExportPlan, write_day_exports
from chatetl.graph.load import load_graph_partition
from chatetl.graph.retract import apply_graph_retractions
from chatetl.ingest.index import find_uploads
from chatetl.ingest.ledger import parser_fingerprint
from chatetl.ingest.partition import ingest_partition
from chatetl.rag.embeddings import load_embedder
from chatetl.rag.retract import load_day_files, write_day_files
from chatetl.samples import chatgpt_conversations, continued, sample_uploads
from chatetl.settings import Settings
from chatetl.storage import LocalObjectStore

# ---- inputs ----

ZIP_TIME = (2026, 1, 1, 0, 0, 0)
# bench/platforms' generators and the file names their readers know (as bench/platform_throughput.py has them)
PLATFORMS = (("gemini", "MyActivity.json"), ("ai_studio", "ai-studio-takeout.zip"), ("deepseek", "deepseek-conversations.json"),
             ("grok", "prod-grok-backend.json"), ("le_chat", "le-chat-export.zip"), ("open_webui", "open-webui-chats.json"))
PLATFORM_BYTES = 40_000  # each bench/platforms file: a handful of conversations
SHAPED_BYTES = 60_000  # each bench/chatgpt_shaped file
# the day each step's uploads arrive (their mtime, noon UTC: partition_of)
DAYS = {"samples": "2026-03-01", "platforms": "2026-03-02", "damaged": "2026-03-03", "changes": "2026-03-04"}
DEEP = {"samples": False, "platforms": True, "damaged": False, "changes": True}  # the graph's deep mode per day
CLI_FORMATS = ("chat-export-json", "sharegpt", "chat-export-md", "md", "yaml", "html", "sharegpt-jsonl", "archive")
# what differs from run to run: left out of the reports (see the module docstring)
RUN_DEPENDENT = {"seconds", "embedding_seconds", "largest_transaction_bytes", "bytes_written", "graph_updates"}
STORE = "<store>"


def fixed_zip(members: dict[str, bytes], compress: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip whose bytes depend only on its members (fixed member times)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = compress
            info.external_attr = 0o600 << 16
            zf.writestr(info, data)
    return buf.getvalue()


def repacked(data: bytes) -> bytes:
    """A generated zip packed again with fixed member times (zipfile stamps the wall clock): the same members."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = zf.infolist()
        if len({i.compress_type for i in infos}) > 1:
            raise ValueError("members of several compressions")
        return fixed_zip({i.filename: zf.read(i) for i in infos}, infos[0].compress_type if infos else zipfile.ZIP_DEFLATED)


def bench_module(relative: str) -> ModuleType:
    """A generator of bench/ loaded from its file: bench/ never goes on sys.path, where its modules
    (bench/attachments.py…) would shadow the test packages of the same name."""
    path = REPO / "bench" / relative
    spec = importlib.util.spec_from_file_location("chatetl_bench_" + path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def platform_files() -> dict[str, bytes]:
    """bench/platforms' generated exports and bench/chatgpt_shaped's files, small (name -> bytes)."""
    chatgpt_shaped = bench_module("chatgpt_shaped.py")

    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="chatetl-golden-gen-") as tmp:
        def made(name: str, write: Callable[[Path], Any]) -> None:
            path = Path(tmp, name)
            write(path)
            data = path.read_bytes()
            out[name] = repacked(data) if name.endswith(".zip") else data

        for module, name in PLATFORMS:
            made(name, lambda p, m=module: bench_module(f"platforms/{m}.py").write(p, PLATFORM_BYTES))
        # (these share their seed: the same conversation ids in three uploads of one day, in other states)
        made("chatgpt-shaped.json", lambda p: chatgpt_shaped.write_chatgpt_file(p, SHAPED_BYTES))
        made("claude-shaped.json", lambda p: chatgpt_shaped.write_claude_file(p, SHAPED_BYTES))
        made("chatgpt-sharded.zip", lambda p: chatgpt_shaped.write_sharded_zip(p, SHAPED_BYTES))
        made("one-conversation.json", lambda p: chatgpt_shaped.write_one_conversation(p, SHAPED_BYTES))
    return out


def damaged_files() -> dict[str, bytes]:
    """Uploads the readers refuse in part: each refusal is reported in its place, the rest read."""
    convs = chatgpt_conversations()
    good = [json.dumps(c).encode() for c in convs]
    dangling = json.loads(good[1])
    dangling["id"] = dangling["conversation_id"] = "dangling-parent"
    node = next(k for k, n in dangling["mapping"].items() if n.get("message") and n.get("parent"))
    dangling["mapping"][node]["parent"] = "nowhere"
    deep = b'{"title": "deep", "id": "deep", "mapping": {}, "x": ' + b"[" * 600 + b"]" * 600 + b"}"
    drift = json.loads(good[0]) | {"unknown_field": {"kept": [1, {"deep": [[2]]}]}}  # a field no reader knows: drift
    records = [json.dumps(drift).encode(), b"[1, 2, 3]", b'{"title": "no mapping", "id": "bad-1"}', json.dumps(dangling).encode(),
               b'{"title": "x", "id": tru}', deep, good[2]]
    array = b"[" + b",\n".join(records) + b"]"
    bad_member = json.dumps([convs[0] | {"id": "crc", "conversation_id": "crc", "title": "x" * 5000}]).encode()
    crc = bytearray(fixed_zip({"conversations-000.json": bad_member, "conversations-001.json": good[1]}, zipfile.ZIP_STORED))
    crc[crc.find(b"x" * 5000) + 2500] = ord("y")
    chat = {"schema": "chat-export/1", "platform": "grok", "title": "Über UTF-16", "chat_id": "utf16-chat",
            "messages": [{"role": "user", "text": "Grüße 🚀"}, {"role": "assistant", "text": "Hallo!"}]}
    return {
        "conversations.json": array,
        "cut-short.json": array[: len(array) * 2 // 3],
        "bad-crc.zip": bytes(crc),
        "unknown.json": b'{"hello": "world"}',
        "empty.json": b"",
        "two-states.json": json.dumps([convs[1], continued(convs[1], "again"), convs[2]]).encode(),
        "utf16.json": json.dumps(chat, ensure_ascii=False).encode("utf-16"),
    }


def changed_files() -> tuple[dict[str, bytes], dict[str, bytes], list[str]]:
    """The `changes` day: (uploads replaced under their old key, new uploads, keys deleted)."""
    convs = chatgpt_conversations()
    newer = [continued(convs[0]), *convs[1:]]
    shards = {f"conversations-{i:03d}.json": json.dumps(newer[i::2], indent=1).encode() for i in range(2)}
    replaced = {"raw/samples/chatgpt-export.zip": fixed_zip(shards)}
    new = {"raw/changes/older-state.json": json.dumps([convs[0], convs[1]]).encode()}
    return replaced, new, ["raw/damaged/unknown.json"]


def step_uploads() -> dict[str, tuple[dict[str, bytes], list[str]]]:
    """Per step, the uploads it puts (key -> bytes) and deletes."""
    replaced, new, deleted = changed_files()
    return {
        "samples": (dict(sample_uploads()), []),
        "platforms": ({f"raw/platforms/{n}": d for n, d in platform_files().items()}, []),
        "damaged": ({f"raw/damaged/{n}": d for n, d in damaged_files().items()}, []),
        "changes": ({**replaced, **new}, deleted),
    }


def input_digests(steps: dict[str, tuple[dict[str, bytes], list[str]]]) -> dict[str, dict[str, Any]]:
    return {step: {"put": {k: sha256(v) for k, v in sorted(puts.items())}, "delete": deleted}
            for step, (puts, deleted) in steps.items()}


# ---- the bucket ----


def report(value: Any, canon: Canon) -> Any:
    """A stage's result (a Tally dataclass) as JSON, run-dependent fields left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: report(getattr(value, f.name), canon) for f in dataclasses.fields(value) if f.name not in RUN_DEPENDENT}
    if isinstance(value, dict):
        return {str(k): report(v, canon) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [report(v, canon) for v in value]
    return canon.value(value)


RECORDED_PREFIXES = ("normalized/", "quarantine/", "rag/", "exports/", "state/")
LEDGER_PREFIX = "state/ledger/"


def ledger_canon(data: bytes, store: LocalObjectStore) -> str:
    """The ledger without its run's wall clock; an output's ETag is checked to be the output's MD5, the
    parser's fingerprint to be the readers' code's (a digest of their source, which any edit changes)."""
    doc = json.loads(data)

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            out = {k: clean(v) for k, v in value.items() if k != "processed_at"}
            if "outputs" in value and isinstance(value["outputs"], dict):
                out["outputs"] = {k: _etag_check(store, k, etag) for k, etag in value["outputs"].items()}
            if value.get("parser") == parser_fingerprint():
                out["parser"] = "= parser_fingerprint()"
            return out
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return dumps(clean(doc))


def _etag_check(store: LocalObjectStore, key: str, etag: str) -> str:
    head = store.head(key)
    if head is None:
        return "the object is gone"
    return "= the object's MD5" if head.etag == etag else f"{etag}, not the object's MD5 {head.etag}"


class Recorder:
    """What the steps wrote, step by step, in canonical forms: the golden files' content."""

    def __init__(self, store: LocalObjectStore) -> None:
        self.store = store
        self.canon = Canon(store.root, STORE)
        self.steps: list[dict[str, Any]] = []
        self.tables: dict[str, dict[str, Any]] = {}
        self.texts: dict[str, str] = {}
        self.cli: list[dict[str, Any]] = []
        self._bucket: dict[str, dict[str, Any]] = {}
        self._graph: set[str] = set()

    def object_entry(self, key: str) -> dict[str, Any]:
        path = self.store.root / key
        data = path.read_bytes()
        root = self.canon.root.encode()
        if key.endswith(".parquet"):
            as_written = dumps(parquet_record(path, Canon()))
            held = json.dumps(self.canon.root)[1:-1] in as_written  # (its values hold the path)
            record = json.loads(as_written.replace(json.dumps(self.canon.root)[1:-1], STORE))
            digest = content_digest(record)
            self.tables[digest] = record
            return {"sha256": None if held else sha256(data), "size": None if held else len(data), "table": digest}
        if key.startswith(LEDGER_PREFIX):
            text = ledger_canon(data, self.store)
            digest = sha256(text.encode())
            self.texts[digest] = text
            return {"sha256": None, "size": None, "canonical": digest}
        canonical = data.replace(root, STORE.encode())
        entry: dict[str, Any] = {"sha256": sha256(data) if canonical == data else None, "size": len(data) if canonical == data else None,
                                 "canonical": sha256(canonical)}
        if key.endswith(".json") and not key.startswith("exports/"):
            self.texts[entry["canonical"]] = canonical.decode("utf-8", "surrogateescape")
        return entry

    def bucket(self) -> dict[str, dict[str, Any]]:
        return {o.key: self.object_entry(o.key) for prefix in RECORDED_PREFIXES for o in self.store.list(prefix)}

    def step(self, name: str, reports: dict[str, Any], driver: Any, database: str | None) -> None:
        bucket = self.bucket()
        graph = set(graph_lines(driver, database, self.canon))
        self.steps.append({
            "step": name,
            "reports": report(reports, self.canon),
            "bucket": {
                "put": {k: v for k, v in sorted(bucket.items()) if self._bucket.get(k) != v},
                "deleted": sorted(set(self._bucket) - set(bucket)),
            },
            "graph": {"added": sorted(graph - self._graph), "removed": sorted(self._graph - graph)},
            "schema": graph_schema(driver, database),
        })
        self._bucket, self._graph = bucket, graph


# ---- the graph ----


def graph_lines(driver: Any, database: str | None, canon: Canon) -> Iterator[str]:
    """Every node (labels, properties) and relationship (type, its ends' labels and keys, properties), one
    canonical line each; a chunk's embedding as the sha256 of its float32 bytes."""
    import struct

    nodes, _, _ = driver.execute_query("MATCH (n) RETURN labels(n) AS labels, properties(n) AS props", database_=database)
    for r in nodes:
        props = dict(r["props"])
        if isinstance(props.get("embedding"), list):
            vector = props["embedding"]
            props["embedding"] = {"float32_sha256": sha256(struct.pack(f"<{len(vector)}f", *vector)), "dimensions": len(vector)}
        yield dumps(["node", sorted(r["labels"]), canon.value(props)])
    rels, _, _ = driver.execute_query(
        """
        MATCH (a)-[r]->(b)
        RETURN type(r) AS type, labels(a) AS a_labels, coalesce(a.key, a.id) AS a_key,
               labels(b) AS b_labels, coalesce(b.key, b.id) AS b_key, properties(r) AS props
        """,
        database_=database,
    )
    for r in rels:
        yield dumps(["relationship", r["type"], sorted(r["a_labels"]), r["a_key"], sorted(r["b_labels"]), r["b_key"], canon.value(dict(r["props"]))])


def graph_schema(driver: Any, database: str | None) -> list[Any]:
    """The constraints and indexes (their names, what they are on, their settings), lookup indexes apart."""
    rows, _, _ = driver.execute_query(
        "SHOW INDEXES YIELD name, type, entityType, labelsOrTypes, properties, owningConstraint, options "
        "WHERE type <> 'LOOKUP' RETURN *", database_=database)
    constraints, _, _ = driver.execute_query("SHOW CONSTRAINTS YIELD name, type, entityType, labelsOrTypes, properties RETURN *",
                                             database_=database)
    out = [["index", r["name"], r["type"], r["entityType"], r["labelsOrTypes"], r["properties"], r["owningConstraint"],
            (r["options"] or {}).get("indexConfig", {})] for r in rows]
    out += [["constraint", r["name"], r["type"], r["entityType"], r["labelsOrTypes"], r["properties"]] for r in constraints]
    return sorted(json.loads(dumps(o)) for o in out)


def drop_schema(driver: Any, database: str | None) -> None:
    """Every constraint and index but the lookup ones gone: the pipeline's load creates its own."""
    for r in driver.execute_query("SHOW CONSTRAINTS YIELD name RETURN name", database_=database).records:
        driver.execute_query(f"DROP CONSTRAINT `{r['name']}` IF EXISTS", database_=database)
    for r in driver.execute_query("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP' RETURN name", database_=database).records:
        driver.execute_query(f"DROP INDEX `{r['name']}` IF EXISTS", database_=database)


def wipe_graph(driver: Any, database: str | None) -> None:
    with driver.session(database=database) as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    drop_schema(driver, database)


# ---- the steps ----


def _noon(day: str) -> float:
    return datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC).timestamp()


def put_uploads(store: LocalObjectStore, day: str, puts: dict[str, bytes], deleted: list[str]) -> None:
    for key, data in puts.items():
        store.put_bytes(key, data)
        os.utime(store.root / key, (_noon(day), _noon(day)))  # the day it arrived: its partition
    for key in deleted:
        store.delete(key)


def run_day(store: LocalObjectStore, driver: Any, database: str | None, day: str, deep: bool, embedder: Any) -> dict[str, Any]:
    """One day through every stage, as the ingest job's assets call the library; each stage's result."""
    found, _note = find_uploads(store, [day], now=_noon(day) + 36_000)
    ingest = ingest_partition(store, day, found[day].uploads)
    retracted, taken_over = apply_graph_retractions(store, driver, day, database, deep=deep)
    graph = load_graph_partition(store, driver, day, database, deep=deep)
    documents = write_day_files(store, driver, day, database=database, embedder=embedder)  # outside the pool ...
    in_graph = load_day_files(store, driver, day, database=database)  # ... then the graph from the rag/ files
    for name in ("documents_in_graph", "documents_failed", "failures", "chunks_in_graph"):  # the one result recorded
        setattr(documents, name, getattr(in_graph, name))
    exports = write_day_exports(store, day, plan=ExportPlan(), archive_page=False)
    archive = write_archive(store)
    return {
        "uploads": {"how": found[day].how, "uploads": [u.key for u in found[day].uploads], "moved": found[day].moved,
                    "gone": found[day].gone},
        "normalized": ingest, "graph_retracted": retracted, "graph_taken_over": taken_over, "graph": graph,
        "documents": documents, "exports": exports,
        "archive": {"key": archive.key, "written": archive.written, "conversations": archive.conversations},
    }


def run_pipeline(root: Path, driver: Any, database: str | None) -> Recorder:
    """The steps of the module's docstring on a fresh local bucket at `root` and an emptied graph."""
    store = LocalObjectStore(root)
    wipe_graph(driver, database)
    recorder = Recorder(store)
    embedder = load_embedder(settings=Settings.from_env({}))  # the built-in model, whatever the environment says
    uploads = step_uploads()
    for step, (puts, deleted) in uploads.items():
        day = DAYS[step]
        put_uploads(store, day, puts, deleted)
        recorder.step(step, run_day(store, driver, database, day, DEEP[step], embedder), driver, database)
    rerun = [{"day": DAYS[step], **run_day(store, driver, database, DAYS[step], DEEP[step], embedder)} for step in DAYS]
    recorder.step("rerun", {"days": rerun}, driver, database)
    return recorder


# ---- the command line ----


def cli_inputs(folder: Path) -> None:
    """Every step's uploads as files of one folder (the replaced zip beside the one it replaced)."""
    for step, (puts, _) in step_uploads().items():
        for key, data in puts.items():
            path = folder / step / key.removeprefix("raw/").replace("/", "_")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


TWO_PROCESSES = "normalize, two processes"


def cli_runs() -> list[tuple[str, list[str]]]:
    runs = [("normalize, one process", ["normalize", "inputs", "--out", "out/normalize-1", "--workers", "1"]),
            (TWO_PROCESSES, ["normalize", "inputs", "--out", "out/normalize-2", "--workers", "2"])]
    runs += [(f"export {fmt}", ["export", "inputs", "--out", f"out/export-{fmt}", "--format", fmt]) for fmt in CLI_FORMATS]
    runs.append(("export all, zip all, everything in", ["export", "inputs", "--out", "out/export-all", "--format", "all", "--zip", "all",
                                                        "--include-reasoning", "--include-tools", "--include-hidden", "--include-branches"]))
    return runs


def run_cli(work: Path, recorder: Recorder, invoke: Callable[[list[str]], tuple[int, str, str]]) -> None:
    """Each command in `work` (relative paths: what the tables hold is the same wherever it runs)."""
    cli_inputs(work / "inputs")
    canon = Canon(work, "<cli folder>")
    for name, args in cli_runs():
        code, out, err = invoke(args)
        out_dir = work / args[args.index("--out") + 1]
        files = parts_read_whole(out_dir, recorder, canon) if name == TWO_PROCESSES else output_files(out_dir, recorder, canon)
        recorder.cli.append({"run": name, "args": args, "exit_code": code, "stdout": canon.text(out), "stderr": canon.text(err), "files": files})


def output_files(folder: Path, recorder: Recorder, canon: Canon) -> dict[str, dict[str, str]]:
    """Every file's sha256 (a Parquet file's content recorded too)."""
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        entry = {"sha256": sha256(path.read_bytes())}
        if path.suffix == ".parquet":
            record = parquet_record(path, canon)
            recorder.tables[content_digest(record)] = record
            entry["table"] = content_digest(record)
        files[path.relative_to(folder).as_posix()] = entry
    return files


def parts_read_whole(folder: Path, recorder: Recorder, canon: Canon) -> dict[str, dict[str, str]]:
    """Each table's part files read in order, as one table (its schema and rows): which process converts which
    piece, the workers' timing, sets how many parts there are and their row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = {}
    for table in ("conversations", "messages"):
        parts = sorted((folder / table).glob("part-*.parquet"))
        record = table_rows(pa.concat_tables([pq.read_table(p) for p in parts]), canon)
        recorder.tables[content_digest(record)] = record
        files[f"{table}/part-*.parquet"] = {"table": content_digest(record)}
    return files


def click_invoke(args: list[str]) -> tuple[int, str, str]:
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


# ---- the golden files ----


FILES = ("steps", "tables", "texts", "cli")


def golden_lines(recorder: Recorder) -> dict[str, list[Any]]:
    """The content of each xz golden file, as JSON (lists, not tuples)."""
    lines = {
        "steps": recorder.steps,
        "tables": [{"table": d, **t} for d, t in sorted(recorder.tables.items())],
        "texts": [{"text": d, "value": t} for d, t in sorted(recorder.texts.items())],
        "cli": recorder.cli,
    }
    return json.loads(dumps(lines))


def read_golden(name: str) -> Any:
    """`inputs` or one of FILES, as written."""
    if name == "inputs":
        return json.loads((GOLDEN / "inputs.json").read_text())
    return read_jsonl_xz(GOLDEN / f"{name}.jsonl.xz")


def record_all(work: Path, driver: Any, database: str | None, invoke: Callable[[list[str]], tuple[int, str, str]]) -> Recorder:
    recorder = run_pipeline(work / "bucket", driver, database)
    (work / "cli").mkdir(parents=True)
    cwd = os.getcwd()
    os.chdir(work / "cli")
    try:
        run_cli(work / "cli", recorder, invoke)
    finally:
        os.chdir(cwd)
    return recorder


def main() -> None:
    driver, database = services_driver()
    inputs = input_digests(step_uploads())
    try:
        with tempfile.TemporaryDirectory(prefix="chatetl-golden-") as a, tempfile.TemporaryDirectory(prefix="chatetl-golden-") as b:
            first = golden_lines(record_all(Path(a), driver, database, click_invoke))
            again = golden_lines(record_all(Path(b) / "elsewhere", driver, database, click_invoke))  # (a path of another length)
    finally:
        driver.close()
    different = [name for name in FILES if first[name] != again[name]]
    if different or input_digests(step_uploads()) != inputs:
        raise SystemExit(f"two runs in two folders recorded different {', '.join(different) or 'inputs'}: not deterministic, nothing written")
    GOLDEN.mkdir(parents=True, exist_ok=True)
    (GOLDEN / "inputs.json").write_text(json.dumps(inputs, indent=1, sort_keys=True) + "\n")
    for name in FILES:
        write_jsonl_xz(GOLDEN / f"{name}.jsonl.xz", first[name])
    print(", ".join(f"{p.name} {p.stat().st_size / 1000:.0f} KB" for p in sorted(GOLDEN.iterdir())))


if __name__ == "__main__":
    main()
