"""`chatetl normalize`: inputs into the normalized tables in a local folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Iterator

import click

from chatetl.model import Conversation
from chatetl.readers import ReadReport, read_entries, read_path
from chatetl.readers.entry import Entry
from chatetl.settings import Settings
from chatetl.storage import S3ObjectStore, s3_client
from chatetl.tables import TableWriter


def _s3_entries(uri: str, report: ReadReport) -> Iterator[Entry]:
    bucket, _, prefix = uri[len("s3://"):].partition("/")
    store = S3ObjectStore(s3_client(Settings.from_env().s3_endpoint_url), bucket)
    found = False
    for info in store.list(prefix):
        found = True
        yield Entry(name=store.uri(info.key), opener=lambda key=info.key: store.open(key), size=info.size)
    if not found:
        report.error(uri, "", "no objects under this prefix")


def iter_inputs(inputs: tuple[str, ...], report: ReadReport) -> Iterator[Conversation]:
    for item in inputs:
        if item.startswith("s3://"):
            yield from read_entries(_s3_entries(item, report), report)
        else:
            yield from read_path(Path(item), report)


def iter_leaves(inputs: tuple[str, ...], report: ReadReport) -> Iterator[tuple]:
    """The leaves (entry, format, layout) of the inputs, in the order `iter_inputs` reads them."""
    from chatetl.readers.archive import expand
    from chatetl.readers.parallel import path_leaves

    for item in inputs:
        if item.startswith("s3://"):
            for entry in _s3_entries(item, report):
                yield from expand(entry, report)
        else:
            yield from path_leaves(Path(item), report)


def _local_bytes(inputs: tuple[str, ...]) -> int | None:
    """The size of the local inputs (None when one is in S3: not known before listing)."""
    total = 0
    for item in inputs:
        if item.startswith("s3://"):
            return None
        p = Path(item)
        if p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        elif p.exists():
            total += p.stat().st_size
    return total


@click.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder")
@click.option(
    "--workers", type=click.IntRange(min=1), default=None,
    help="Worker processes converting records (chatetl.readers.parallel); 1 (the default for now): this process alone.",
)
def normalize(inputs: tuple[str, ...], out: Path, workers: int | None) -> None:
    """Read INPUTS (files, folders, zips, s3://bucket/prefix) into OUT/conversations and OUT/messages."""
    from chatetl.readers.parallel import read_into, resolve_workers

    report = ReadReport()
    (out / "conversations").mkdir(parents=True, exist_ok=True)
    (out / "messages").mkdir(parents=True, exist_ok=True)
    n = resolve_workers(workers, _local_bytes(inputs))
    with TableWriter(out / "conversations" / "part-0.parquet", out / "messages" / "part-0.parquet") as writer:
        if n == 1:
            for conv in iter_inputs(inputs, report):
                writer.add(conv)
        else:
            read_into(writer, iter_leaves(inputs, report), report, n)
    for err in report.errors:
        click.echo(f"error: {err}", err=True)
    summary = {"files": report.files, "conversations": writer.conversations, "messages": writer.messages, "errors": len(report.errors)}
    if report.skipped:
        summary["skipped"] = dict(report.skipped)
    if report.drift:
        summary["drift"] = dict(report.drift)
    click.echo(json.dumps(summary, sort_keys=True))
    sys.exit(1 if report.errors else 0)
