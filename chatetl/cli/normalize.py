"""`chatetl normalize`: inputs into the normalized tables in a local folder (chatetl.normalize).

The command decides how many processes read and, for more than one, starts their server before it
imports the readers and pyarrow (chatetl.normalize.processes): this module imports nothing heavy."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from chatetl.cli.options import (
    INPUT_ERRORS,
    OK,
    quiet_and_progress,
    report_errors,
    with_examples,
)

if TYPE_CHECKING:
    from chatetl.readers import ReadReport


def _input_bytes(inputs: tuple[str, ...]) -> int | None:
    """The size of the inputs: local ones from the disk, s3:// ones listed (None when one cannot be)."""
    from chatetl.normalize.processes import path_bytes

    total = 0
    for item in inputs:
        if item.startswith("s3://"):
            from chatetl.cli.inputs import s3_bytes  # (boto3: only for an s3:// input)

            size = s3_bytes(item)
            if size is None:
                return None
            total += size
        else:
            total += path_bytes(item)
    return total


def _write_keepsakes(report: ReadReport, out: Path) -> dict[str, int]:
    """What the inputs keep beside their chats as OUT/<table>/part-00000.parquet (chatetl.tables.keepsakes),
    each table's rows; a table they do not have leaves no part."""
    from chatetl.tables.keepsakes import KEEPSAKE_SCHEMAS, keepsake_rows, write_keepsakes

    for table in KEEPSAKE_SCHEMAS:
        (out / table / "part-00000.parquet").unlink(missing_ok=True)
    counts = {table: len(rows) for table, rows in keepsake_rows(report.kept).items() if rows}
    if counts:
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            for table, path in write_keepsakes(report.kept, tmp).items():
                (out / table).mkdir(exist_ok=True)
                os.replace(path, out / table / "part-00000.parquet")
    return counts


def _resolve_attachments(inputs: tuple[str, ...], out: Path, report: ReadReport) -> dict[str, int]:
    """The files the local inputs hold for their chats' attachments, stored once by content under
    OUT/attachments/sha256/ (the bucket's layout) and the messages' attachments set to them: the attachment
    rows, those whose file the inputs held, the distinct files (nothing where no table names one)."""
    from chatetl.attachments.local import LocalAttachments
    from chatetl.attachments.tables import attachment_ids, rewrite_resolved
    from chatetl.storage import LocalObjectStore

    rows = found = 0
    parts = sorted((out / "messages").glob("part-*.parquet"))
    with tempfile.TemporaryDirectory(dir=out) as tmp, LocalAttachments(inputs, LocalObjectStore(out), report, Path(tmp)) as local:
        for messages in parts:
            n, _ = attachment_ids(messages)
            if n:
                rows += n
                found += rewrite_resolved({"conversations": out / "conversations" / messages.name, "messages": messages}, local.resolve, Path(tmp))
        files = len(local.hashes)
    return {"rows": rows, "in_export": found, "files": files} if rows else {}


@click.command(
    short_help="Two Parquet tables, conversations and messages.",
    epilog=with_examples(
        "chatetl normalize ~/Downloads/chatgpt-export.zip --out tables",
        "duckdb -c \"SELECT role, count(*) FROM 'tables/messages/*.parquet' GROUP BY role\"",
    ),
)
@click.argument("inputs", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder to write the tables to (made if missing).")
@click.option(
    "--workers", type=click.IntRange(min=1), default=None,
    help="How many processes read the inputs at once. Default: 2 for inputs of 32 MB or more, else 1; "
         "more than the cores you have does not help.",
)
@quiet_and_progress
def normalize(inputs: tuple[str, ...], out: Path, workers: int | None, quiet: bool, progress: bool | None) -> None:
    """Read chat exports (INPUTS: zips, folders, files, s3://bucket/prefix) into two Parquet tables:
    OUT/conversations/ (one row per chat) and OUT/messages/ (one row per message), each a set of
    part-NNNNN.parquet files to read as one table; what the exports keep beside
    the chats goes to OUT/projects, OUT/project_docs, OUT/memories and OUT/canvases. The files the local
    inputs hold for the chats' attachments (images, uploads) are stored once by content in
    OUT/attachments/sha256/<2 hex>/<sha256>, each message's attachment naming its file by that hash
    (content_hash; none where the export did not contain it). Needs no Java, Neo4j or server."""
    from chatetl.normalize.processes import processes_for, start_server

    size = None if workers else _input_bytes(inputs)
    if processes_for(workers, size) > 1:
        start_server()
    import chatetl.lean_pyarrow  # noqa: F401  (before pyarrow: this process writes local tables only, see the module)
    from chatetl.cli.inputs import input_meter, input_sources
    from chatetl.normalize import normalize_into
    from chatetl.readers import ReadReport
    from chatetl.storage import s3_failure
    from chatetl.tables import PartsWriter

    report = ReadReport()
    (out / "conversations").mkdir(parents=True, exist_ok=True)
    (out / "messages").mkdir(parents=True, exist_ok=True)
    meter = input_meter(inputs, progress, quiet, "normalize")
    with PartsWriter(out / "conversations", out / "messages") as writer, meter:
        meter.count_with(lambda: writer.conversations)
        normalize_into(writer, input_sources(inputs, report), report, workers, size=size, watch=meter.chat_files, failure=s3_failure)
    report_errors(report.errors, quiet)
    summary: dict[str, object] = {"files": report.files, "conversations": writer.conversations, "messages": writer.messages,
                                  "errors": len(report.errors)}
    attachments = _resolve_attachments(inputs, out, report)
    if attachments:
        summary["attachments"] = attachments
    kept = _write_keepsakes(report, out)
    if kept:
        summary["kept"] = kept
    if report.skipped:
        summary["skipped"] = dict(report.skipped)
    if report.drift:
        summary["drift"] = dict(report.drift)
    click.echo(json.dumps(summary, sort_keys=True))
    sys.exit(INPUT_ERRORS if report.errors else OK)
