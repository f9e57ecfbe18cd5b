"""`chatetl normalize`: inputs into the normalized tables in a local folder.

The command decides how many processes it converts on and, for more than one, starts their
forkserver (chatetl.normalize.workers) before it imports the readers and pyarrow, so the forkserver's own
imports run meanwhile on the other core: this module imports nothing heavy at the top.
"""

from __future__ import annotations

import json
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

import click

from chatetl.cli.options import (
    EXIT_CODES,
    INPUT_ERRORS,
    OK,
    quiet_and_progress,
    report_errors,
)


def _input_bytes(inputs: tuple[str, ...]) -> int | None:
    """The size of the inputs: local ones from the disk, s3:// ones listed (None when one cannot be)."""
    total = 0
    for item in inputs:
        if item.startswith("s3://"):
            from chatetl.cli.inputs import s3_bytes

            size = s3_bytes(item)
            if size is None:
                return None
            total += size
            continue
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
    help="Processes converting records: this one and N-1 workers (chatetl.normalize.pool); 1: this one alone. Default: both cores for inputs of 32 MB and more (s3:// ones listed first; a zip there of 32 MB or more is copied to a temporary folder first), else one.",
)
@quiet_and_progress
def normalize(inputs: tuple[str, ...], out: Path, workers: int | None, quiet: bool, progress: bool | None) -> None:
    """Read INPUTS (files, folders, zips, s3://bucket/prefix) into OUT/conversations and OUT/messages
    (part-00000.parquet, part-00001.parquet ...); print a one-line JSON summary."""
    from chatetl.normalize.workers import resolve_workers, start_forkserver

    n = resolve_workers(workers, None if workers else _input_bytes(inputs))
    if n > 1:
        start_forkserver()
    import chatetl.normalize.lean_pyarrow  # noqa: F401  (before pyarrow: see the module's docstring)
    from chatetl.cli.inputs import chat_file_groups, input_meter
    from chatetl.normalize.pool import read_into
    from chatetl.readers import ReadReport
    from chatetl.tables import TableWriter

    report = ReadReport()
    (out / "conversations").mkdir(parents=True, exist_ok=True)
    (out / "messages").mkdir(parents=True, exist_ok=True)
    meter = input_meter(inputs, progress, quiet, "normalize")
    copies = tempfile.TemporaryDirectory(prefix="chatetl-s3-copies-") if n > 1 and any(i.startswith("s3://") for i in inputs) else None
    with copies or nullcontext(), TableWriter.in_parts(out / "conversations", out / "messages") as writer, meter:
        meter.count_with(lambda: writer.conversations)
        for group in chat_file_groups(inputs, report, Path(copies.name) if copies else None):
            read_into(writer, meter.chat_files(group), report, n)
    report_errors(report.errors, quiet)
    summary = {"files": report.files, "conversations": writer.conversations, "messages": writer.messages, "errors": len(report.errors)}
    if report.skipped:
        summary["skipped"] = dict(report.skipped)
    if report.drift:
        summary["drift"] = dict(report.drift)
    click.echo(json.dumps(summary, sort_keys=True))
    sys.exit(INPUT_ERRORS if report.errors else OK)
