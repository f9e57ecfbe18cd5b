"""`chatetl export`: inputs into exported files in a local folder, the same writers the exports asset uses.

    chatetl export INPUT... --out DIR --format FORMAT [--format FORMAT ...] [--zip FORMATS]

FORMAT: chat-export-json, sharegpt, md, md-frontmatter, yaml, html, sharegpt-jsonl, archive, or
all (repeat the option or separate with commas). Files go to DIR/<format>/<name>.<ext>, the
training file to DIR/sharegpt-jsonl/sharegpt.jsonl, the archive page (every conversation of this
run, linking to its html file, which `archive` brings along) to DIR/archive/index.html, the zip to
DIR/chats.zip. A conversation met more than once (the same chat in two files, a resync) is
written once, in its winning state (model.state_order, the state the graph and the bucket keep),
whatever order the inputs are given in.
What goes out is the visible branch; --include-* (or CHATETL_EXPORT_INCLUDE_* /
CHATETL_INCLUDE_* in the environment) let in reasoning, tool internals, hidden context, branches.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import click

from chatetl.cli.inputs import input_meter, read_inputs
from chatetl.cli.options import (
    EXIT_CODES,
    INPUT_ERRORS,
    OK,
    output_errors,
    quiet_and_progress,
    report_errors,
)
from chatetl.cli.terminal import one_line
from chatetl.exports.archive import (
    ARCHIVE,
    ARCHIVE_PAGE,
    ArchiveEntry,
    archive_entry,
    render_archive,
)
from chatetl.exports.files import (
    conversation_files,
    temporary_collector,
    training_lines,
)
from chatetl.exports.formats import (
    ALL_FORMATS,
    PER_CONVERSATION,
    TRAINING,
    parse_formats,
)
from chatetl.exports.meta import export_views
from chatetl.model import state_hash, with_state_hash
from chatetl.readers import ReadReport
from chatetl.selection import ContentOptions


def _inside(root: Path, relative: str) -> Path:
    """The target of a relative export path, refusing anything that would leave `root`."""
    target = (root / relative).resolve()
    if root.resolve() not in target.parents:
        raise click.ClickException(f"refusing to write outside {root}: {relative!r}")
    return target


def _write(target: Path, data: bytes) -> None:
    """A file of OUT, whole or not at all: a full disk leaves no cut file behind."""
    try:
        target.write_bytes(data)
    except OSError:
        target.unlink(missing_ok=True)
        raise


def _flag(name: str) -> click.Option:
    return click.option(f"--include-{name}/--exclude-{name}", f"include_{name}", default=None, help=f"Let {name} in (default: the environment, else out).")


@click.command("export", epilog=EXIT_CODES)
@click.argument("inputs", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder")
@click.option("--format", "formats", multiple=True, required=True, metavar="FORMAT", help=f"One of {', '.join(ALL_FORMATS)}, or all (repeatable, comma-separated)")
@click.option("--zip", "zip_formats", default=None, metavar="FORMATS", help="Also write OUT/chats.zip holding these formats (comma-separated, or all)")
@_flag("reasoning")
@_flag("tools")
@_flag("hidden")
@_flag("branches")
@quiet_and_progress
def export(
    inputs: tuple[str, ...], out: Path, formats: tuple[str, ...], zip_formats: str | None, quiet: bool, progress: bool | None,
    **flags: bool | None,
) -> None:
    """Read INPUTS (files, folders, zips, s3://bucket/prefix) and write every conversation in each FORMAT to OUT."""
    try:
        chosen = parse_formats(list(formats))
        bundle = parse_formats(zip_formats, ()) if zip_formats else ()
        env = ContentOptions.from_env("EXPORT")
    except ValueError as exc:
        raise click.BadParameter(one_line(str(exc))) from exc
    options = env.model_copy(update={k: v for k, v in flags.items() if v is not None})
    rendered = tuple(f for f in PER_CONVERSATION if f in chosen or f in bundle)
    want_training = TRAINING in chosen or TRAINING in bundle

    report = ReadReport()
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[Path]] = {}  # conversation key -> its files on disk
    rows: dict[str, ArchiveEntry] = {}  # conversation key -> its archive row (its newest state's)
    want_archive = ARCHIVE in chosen or ARCHIVE in bundle
    conversations = empty = superseded = 0
    meter = input_meter(inputs, progress, quiet, "export")
    records = exported = archived = 0
    # a full disk (temp or OUT) stops the writing: the summary still says what was written
    with output_errors(str(out), tempfile.gettempdir()) as stop, temporary_collector(bundle) as collector, meter:
        for conv in read_inputs(inputs, report, meter):
            conversations += 1
            conv = with_state_hash(conv, state_hash(conv))  # hashed once: the collector and the archive row order by it
            views = export_views(conv, options)  # one selection of turns for every format and the training lines
            files = conversation_files(conv, rendered, options, views)
            lines = training_lines(conv, options, views) if want_training else []
            if not files and not lines:
                empty += 1
                continue
            if not collector.add(conv, files, lines):  # the state kept already wins (or is this one)
                superseded += 1
                continue
            old = written.get(conv.key)
            written[conv.key] = paths = []  # (filled as they are written: a full disk midway still counts them)
            for f in files:
                if f.format not in chosen:
                    continue
                target = _inside(out, f.path)
                target.parent.mkdir(parents=True, exist_ok=True)
                _write(target, f.data)
                paths.append(target)
            if old is not None:  # a winning state of a conversation already written: its stale files go
                superseded += 1
                for stale in old:
                    if stale not in paths:
                        stale.unlink(missing_ok=True)
            if want_archive:
                rows[conv.key] = archive_entry(conv, next((f.path for f in files if f.format == "html"), None))
            exported = collector.conversations
        # a training file wanted only for the zip is written beside the collector, never into OUT
        training_target = _inside(out, f"{TRAINING}/sharegpt.jsonl") if TRAINING in chosen else collector.workdir / "sharegpt.jsonl"
        if want_training:
            training_target.parent.mkdir(parents=True, exist_ok=True)
            records = collector.write_training(training_target)
        page = render_archive(rows.values()).encode("utf-8", "replace") if want_archive else b""
        if ARCHIVE in chosen:
            target = _inside(out, f"{ARCHIVE}/{ARCHIVE_PAGE}")
            target.parent.mkdir(parents=True, exist_ok=True)
            _write(target, page)
            archived = 1
        if bundle:
            extra = [(f"{TRAINING}/sharegpt.jsonl", training_target)] if TRAINING in bundle and records else []
            if ARCHIVE in bundle:
                (collector.workdir / "archive.html").write_bytes(page)
                extra.append((f"{ARCHIVE}/{ARCHIVE_PAGE}", collector.workdir / "archive.html"))
            collector.write_zip(_inside(out, "chats.zip"), extra)
        if TRAINING in chosen and not records:  # nothing to train on: no (stale) training file
            training_target.unlink(missing_ok=True)
            if not any(training_target.parent.iterdir()):
                training_target.parent.rmdir()

    counts = {f: 0 for f in chosen}
    for paths in written.values():
        for p in paths:
            counts[p.parent.name] += 1
    if TRAINING in chosen:
        counts[TRAINING] = records
    if ARCHIVE in chosen:
        counts[ARCHIVE] = archived
    report_errors(report.errors, quiet)
    if stop.reason:
        click.echo(f"error: {stop.reason}", err=True)
    summary: dict[str, object] = {
        "files": report.files,
        "conversations": conversations,
        "exported": exported,
        "written": counts,
        "errors": len(report.errors),
    }
    if empty:
        summary["empty"] = empty
    if superseded:
        summary["superseded"] = superseded
    if bundle and not stop.reason:
        summary["zip"] = str(out / "chats.zip")
    if stop.reason:
        summary["stopped"] = stop.reason
    click.echo(json.dumps(summary, sort_keys=True))
    sys.exit(INPUT_ERRORS if report.errors or stop.reason else OK)
