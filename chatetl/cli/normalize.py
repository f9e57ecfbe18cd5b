"""`chatetl normalize`: inputs into the normalized tables in a local folder.

Also where the commands find their inputs: `iter_inputs` (conversations), `iter_leaves` (the chat
files inside them) and `read_inputs` (the conversations of the leaves, counted by an `InputMeter`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from chatetl.cli.options import (
    EXIT_CODES,
    INPUT_ERRORS,
    OK,
    quiet_and_progress,
    report_errors,
)
from chatetl.cli.progress import InputMeter, leaf_bytes, show_progress
from chatetl.model import Conversation
from chatetl.readers import ReadReport, _read_leaves, read_entries, read_path
from chatetl.readers.entry import Entry
from chatetl.settings import Settings
from chatetl.storage import S3ObjectStore, s3_client, s3_failure
from chatetl.tables import TableWriter


def _s3_entries(uri: str, report: ReadReport) -> Iterator[Entry]:
    bucket, _, prefix = uri[len("s3://"):].partition("/")
    store = S3ObjectStore(s3_client(Settings.from_env().s3_endpoint_url), bucket)
    found = False
    try:
        for info in store.list(prefix):
            found = True
            yield Entry(name=store.uri(info.key), opener=lambda key=info.key: store.open(key), size=info.size)
    except Exception as exc:  # refused credentials, no bucket, no server: one line, not a traceback
        why = s3_failure(exc)
        if why is None:
            raise
        report.error(uri, "", why)
        return
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


def read_inputs(inputs: tuple[str, ...], report: ReadReport, meter: InputMeter) -> Iterator[Conversation]:
    """The conversations `iter_inputs` gives, read leaf by leaf through `meter` (and counted by it)."""
    return iter(meter.conversations(_read_leaves(meter.leaves(iter_leaves(inputs, report)), report)))


def input_meter(inputs: tuple[str, ...], progress: bool | None, quiet: bool, label: str) -> InputMeter:
    """The meter for a command's `--progress` / `--quiet`; its total (the leaves' bytes) only for local inputs."""
    show = show_progress(progress, quiet)
    total = None
    if show and not any(item.startswith("s3://") for item in inputs):
        total = leaf_bytes(iter_leaves(inputs, ReadReport()))  # a listing only: its findings are the real pass's
    return InputMeter(show, total, label)


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


@click.command(epilog=EXIT_CODES)
@click.argument("inputs", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder")
@click.option(
    "--workers", type=click.IntRange(min=1), default=None,
    help="Processes converting records: this one and N-1 workers (chatetl.readers.parallel); 1: this one alone. Default: both cores for local inputs of 32 MB and more, else one (an s3:// input, whose size is not known, too).",
)
@quiet_and_progress
def normalize(inputs: tuple[str, ...], out: Path, workers: int | None, quiet: bool, progress: bool | None) -> None:
    """Read INPUTS (files, folders, zips, s3://bucket/prefix) into OUT/conversations and OUT/messages
    (part-00000.parquet, part-00001.parquet ...); print a one-line JSON summary."""
    from chatetl.readers.parallel import read_into, resolve_workers

    report = ReadReport()
    (out / "conversations").mkdir(parents=True, exist_ok=True)
    (out / "messages").mkdir(parents=True, exist_ok=True)
    n = resolve_workers(workers, _local_bytes(inputs))
    meter = input_meter(inputs, progress, quiet, "normalize")
    with TableWriter.in_parts(out / "conversations", out / "messages") as writer, meter:
        meter.count_with(lambda: writer.conversations)
        read_into(writer, meter.leaves(iter_leaves(inputs, report)), report, n)
    report_errors(report.errors, quiet)
    summary = {"files": report.files, "conversations": writer.conversations, "messages": writer.messages, "errors": len(report.errors)}
    if report.skipped:
        summary["skipped"] = dict(report.skipped)
    if report.drift:
        summary["drift"] = dict(report.drift)
    click.echo(json.dumps(summary, sort_keys=True))
    sys.exit(INPUT_ERRORS if report.errors else OK)
