"""The readers' golden file: what the normalize path reads from the inputs of tests/readers/test_fast_path.py.

    .venv/bin/python tests/readers_golden.py     # (re)writes tests/readers/golden/fast_path.jsonl.xz

For each input (generated ChatGPT files with damaged records, a look-alike of a record boundary in a
string, unknown fields, a record nested too deep at the end; the sample ChatGPT, Claude.ai and coding-agent zips; a
file cut short; files of odd values the readers check by hand: bool sizes, odd times, unknown roles),
one line with what `read_path` and the TableWriter make of it: both tables (schema and every row, in
order), every error (file, place, reason, the bad record's bytes) and the report's summary; for two of
them, every model read, as its classes, the fields each marks as set and its values in their order,
and its JSON. The test compares the fast path with these, as it was compared with the reference paths
(ijson behind the DepthGuard, the row-dict writer, and the pydantic-validated conversion of commit
afdc011) before they went: what the golden file holds equalled their outputs when it was written.

Run it only when what the readers make of these inputs changes on purpose; a faster reader must leave
the file as it is. The test's tmp_path is `<tmp>` in the file.
"""

from __future__ import annotations

import copy
import io
import json
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "readers" / "golden" / "fast_path.jsonl.xz"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from golden_data import Canon, read_jsonl_xz, table_rows, write_jsonl_xz

from chatetl import tables
from chatetl.readers import ReadReport, read_path
from chatetl.samples import agent_sessions, chatgpt_conversations, chatgpt_export, claude_export

# ---- the inputs ----


def generated_chatgpt(copies: int = 25) -> list[dict]:
    """The sample chats (branches, tools, reasoning, citations, attachments, hidden context) many
    times over under new ids, with look-alikes of a record boundary inside strings."""
    out = []
    for i in range(copies):
        for conv in chatgpt_conversations():
            conv = copy.deepcopy(conv)
            conv["id"] = conv["conversation_id"] = f"{conv['conversation_id']}-{i}"
            node = next(n for n in conv["mapping"].values() if n.get("message") and n["message"]["content"].get("parts"))
            node["message"]["content"]["parts"].append('a look-alike: }, {"title": "no", "mapping": {}} ] and \\" }, {')
            conv["unknown_field"] = {"kept": [i, {"deep": [[i]]}]}
            out.append(conv)
    # damaged records, read today as they are: no mapping; a dangling parent and a cycle; not an object
    out.insert(7, {"title": "no mapping", "id": "bad-1"})
    broken = copy.deepcopy(out[3])
    broken["id"] = broken["conversation_id"] = "broken-tree"
    ids = [k for k, n in broken["mapping"].items() if n.get("message")]
    broken["mapping"][ids[1]]["parent"] = "nowhere"
    broken["mapping"][ids[2]]["parent"] = ids[3]
    broken["mapping"][ids[3]]["parent"] = ids[2]
    out.insert(20, broken)
    out.insert(30, [1, 2, 3])
    out.insert(40, {"title": "numbers", "id": "n", "mapping": {}, "x": 2**62, "y": 1.5e300, "z": -0.0, "w": 1e-320})
    return out


def over_deep(depth: int = 100_000) -> bytes:
    return b'{"title": "deep", "id": "deep", "mapping": {}, "x": ' + b"[" * depth + b"]" * depth + b"}"


def chatgpt_ending_too_deep(folder: Path, indent: int | None) -> Path:
    """The generated chats, the over-deep record last."""
    body = json.dumps(generated_chatgpt(), indent=indent).encode()
    path = folder / "conversations.json"
    path.write_bytes(body[:-1].rstrip() + b",\n" + over_deep() + b"\n]\n")
    return path


def cut_short(folder: Path) -> Path:
    body = json.dumps(generated_chatgpt(2)).encode()
    path = folder / "conversations.json"
    path.write_bytes(body[: len(body) * 2 // 3])
    return path


def sample_zip(folder: Path, name: str) -> Path:
    path = folder / name
    make = {"chatgpt.zip": chatgpt_export, "claude.zip": claude_export, "coding-agents.zip": lambda: agent_sessions.sample()[1]}
    path.write_bytes(make[name]())
    return path


def odd_chatgpt(folder: Path, copies: int = 25) -> Path:
    """The generated chats and one of edge values the checks by hand must read as pydantic did: bool
    sizes, odd times, drift."""
    conversations = generated_chatgpt(copies)
    odd = copy.deepcopy(conversations[0])
    odd["id"] = odd["conversation_id"] = "odd"
    odd["create_time"], odd["update_time"], odd["current_node"] = "2024-05-01T12:00:00+02:00", 1.7e12, None
    for i, node in enumerate(n for n in odd["mapping"].values() if n.get("message")):
        msg = node["message"]
        msg["create_time"] = [None, -5.0, 1.7e12, "2024-01-01T00:00:00", True, 3, "x", float("1e300")][i % 8]
        msg["metadata"] = {"attachments": [{"id": "f", "name": "n", "size": True, "mime_type": "image/png"}, "junk"], "model_slug": 5}
        msg["author"] = {"role": ["odd"] if i == 1 else "critic" if i == 2 else msg["author"]["role"], "name": 7}
        msg["surprise"] = i
    conversations.insert(5, odd)
    path = folder / "conversations.json"
    path.write_bytes(json.dumps(conversations).encode())
    return path


def odd_claude(folder: Path, copies: int = 20) -> Path:
    """The sample Claude.ai chats many times over, one of odd values (numeric and odd times, an
    unknown sender, no parent pointers) and one whose messages are not a list."""
    with zipfile.ZipFile(io.BytesIO(claude_export())) as z:
        base = json.loads(z.read("conversations.json"))
    conversations = []
    for i in range(copies):
        for conv in base:
            conv = copy.deepcopy(conv)
            conv["uuid"] = f"{conv['uuid']}-{i}"
            conversations.append(conv)
    odd = copy.deepcopy(base[0])
    odd["uuid"], odd["created_at"], odd["updated_at"], odd["surprise"] = "odd", 1.7e12, "2024-05-01T12:00:00+02:00", [1]
    for j, msg in enumerate(odd["chat_messages"]):
        msg["created_at"] = [None, "2024-01-01T00:00:00", 5, "x"][j % 4]
        msg["sender"] = "critic" if j == 1 else msg.get("sender")
        msg.pop("parent_message_uuid", None)  # no parent pointers: array order
        msg["index"], msg["odd_field"] = j, {"k": j}
    conversations.insert(3, odd)
    conversations.insert(6, {"uuid": "no-messages", "chat_messages": 5})
    path = folder / "conversations.json"
    path.write_bytes(json.dumps(conversations).encode())
    return path


# case -> (the input written into a folder, what is recorded: "tables" and/or "models")
CASES: dict[str, tuple[Any, tuple[str, ...]]] = {
    "chatgpt ending too deep": (lambda f: chatgpt_ending_too_deep(f, None), ("tables",)),
    "chatgpt ending too deep, indented": (lambda f: chatgpt_ending_too_deep(f, 1), ("tables",)),
    "sample chatgpt zip": (lambda f: sample_zip(f, "chatgpt.zip"), ("tables",)),
    "sample claude zip": (lambda f: sample_zip(f, "claude.zip"), ("tables",)),
    "sample coding agents zip": (lambda f: sample_zip(f, "coding-agents.zip"), ("tables", "models")),
    "cut short": (cut_short, ("tables",)),
    "odd chatgpt": (odd_chatgpt, ("tables",)),
    "odd chatgpt, 2 copies": (lambda f: odd_chatgpt(f, copies=2), ("models",)),
    "odd claude": (odd_claude, ("tables", "models")),
}

# ---- what is recorded ----


def read_tables(path: Path, out: Path) -> tuple:
    """The normalize path: `read_path` into a TableWriter in `out`; (conversations, messages, errors, summary)."""
    import pyarrow.parquet as pq

    report = ReadReport()
    out.mkdir()
    with tables.TableWriter(out / "c.parquet", out / "m.parquet", batch_bytes=50_000) as writer:
        for conv in read_path(path, report):
            writer.add(conv)
    errors = [(e.file, e.where, e.reason, e.raw) for e in report.errors]
    return pq.read_table(out / "c.parquet"), pq.read_table(out / "m.parquet"), errors, report.summary()


def tables_record(result: tuple, folder: Path) -> dict[str, Any]:
    """`read_tables`' result as JSON, the folder's path as `<tmp>`: what `Table.equals` compares, and the rest."""
    canon = Canon(folder)
    conversations, messages, errors, summary = result
    return {"conversations": table_rows(conversations, canon), "messages": table_rows(messages, canon),
            "errors": canon.value([list(e) for e in errors]), "summary": canon.value(summary)}


def models_record(models: list, folder: Path) -> list[dict[str, Any]]:
    """Each model as its class, the fields it marks as set and its values in their order (what `==` and
    `model_fields_set` compare, nested models too), and its JSON."""
    canon = Canon(folder)
    return [{"model": canon.tagged(m), "json": canon.text(m.model_dump_json())} for m in models]


def record(case: str, folder: Path) -> dict[str, Any]:
    make, kinds = CASES[case]
    path = make(folder)
    line: dict[str, Any] = {"case": case}
    if "tables" in kinds:
        line["tables"] = tables_record(read_tables(path, folder / "tables"), folder)
    if "models" in kinds:
        line["models"] = models_record(list(read_path(path, ReadReport())), folder)
    return line


def stored(case: str) -> dict[str, Any]:
    return next(line for line in read_jsonl_xz(GOLDEN) if line["case"] == case)


def main() -> None:
    lines = []
    for case in CASES:
        with tempfile.TemporaryDirectory(prefix="chatetl-readers-golden-") as tmp:
            lines.append(record(case, Path(tmp)))
        with tempfile.TemporaryDirectory(prefix="chatetl-readers-golden-") as tmp:
            elsewhere = Path(tmp, "elsewhere")  # (a path of another length)
            elsewhere.mkdir()
            if record(case, elsewhere) != lines[-1]:
                raise SystemExit(f"{case}: two runs in two folders recorded different outcomes, nothing written")
    write_jsonl_xz(GOLDEN, lines)
    print(f"{len(lines)} cases; {GOLDEN.name} {GOLDEN.stat().st_size / 1000:.0f} KB")


if __name__ == "__main__":
    main()
