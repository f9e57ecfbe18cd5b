"""`chatetl export`: inputs into exported files in a local folder, the same writers the exports asset uses.

    chatetl export INPUT... --out DIR [--format FORMAT ...] [--zip FORMATS]

FORMAT: archive (the default), md, html, chat-export-json, chat-export-md, sharegpt, yaml,
sharegpt-jsonl, or all (repeat the option or separate with commas; `chatetl.exports.formats`).
Files go to DIR/<format>/<name>.<ext>, the training file to DIR/sharegpt-jsonl/sharegpt.jsonl,
the archive page (every conversation of this run, linking to its html file, which `archive`
brings along) to DIR/archive/index.html, the zip to DIR/chats.zip. A conversation met more than
once (the same chat in two files, a resync) is written once, in its winning state
(model.state_order, the state the graph and the bucket keep), whatever order the inputs are given in.
What goes out is the visible branch; --include-* (or CHATETL_EXPORT_INCLUDE_* /
CHATETL_INCLUDE_* in the environment) let in reasoning, tool internals, hidden context, branches.
The files the local inputs hold for the chats' attachments (images, uploads) go to DIR/files/<sha256><ext>,
each once, linked from the md and html files as ../files/… (and into the zip beside them), so the
folder can be moved or zipped; a file the export did not contain is a placeholder naming it.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from chatetl.attachments.local import LocalAttachments
from chatetl.cli.inputs import input_meter, read_inputs
from chatetl.cli.options import (
    INPUT_ERRORS,
    OK,
    output_errors,
    quiet_and_progress,
    report_errors,
    with_examples,
)
from chatetl.cli.terminal import one_line
from chatetl.exports.archive import (
    ARCHIVE,
    ARCHIVE_PAGE,
    ArchiveEntry,
    archive_entry,
    render_archive,
)
from chatetl.exports.attachments import FILES_FOLDER, LINKING_FORMATS, linked_names, source_key
from chatetl.exports.files import (
    ExportCollector,
    ExportFile,
    conversation_files,
    temporary_collector,
    training_lines,
)
from chatetl.exports.formats import (
    PER_CONVERSATION,
    TRAINING,
    parse_formats,
    with_needed,
)
from chatetl.exports.meta import export_views
from chatetl.model import Conversation, state_hash, with_state_hash
from chatetl.readers import ReadReport
from chatetl.selection import ContentOptions
from chatetl.storage import LocalObjectStore

# what `export` writes when no --format is given: the page a person opens first, with every chat's html page
DEFAULT_FORMATS = (ARCHIVE,)

# what --format accepts, in the order a person would pick them, each with what it is for
_FORMAT_HELP = """\b
FORMAT is one of (repeat --format, or separate with commas):
  archive           one page, OUT/archive/index.html, to browse and search every
                    chat (brings html along); the default
  md                Markdown for note apps (Obsidian, Logseq, Joplin): front
                    matter, a heading per turn
  html              a standalone, printable page per chat
  chat-export-json  the Chat Export extension's JSON (reads back into chatetl)
  chat-export-md    the Chat Export extension's Markdown: fenced turns (reads back)
  sharegpt          ShareGPT JSON per chat
  yaml              YAML per chat
  sharegpt-jsonl    one ShareGPT JSON Lines training file of every chat
  all               every format above
(md-frontmatter, the former name of md, still works.)

The files the inputs hold for the chats' attachments (uploaded and generated
images, shared files) go to OUT/files/ once each, linked from md and html (and
the zip); a file the export lacked shows as a placeholder naming it."""


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


def _write_inside(root: Path, relative: str, data: bytes) -> Path:
    """`data` written to a relative export path under `root` (its folder made)."""
    target = _inside(root, relative)
    target.parent.mkdir(parents=True, exist_ok=True)
    _write(target, data)
    return target


_FLAG_HELP = {"reasoning": "reasoning (thinking)", "tools": "tool calls and results", "hidden": "hidden context (system prompts, memory)",
              "branches": "abandoned branches (edited or regenerated turns)"}


def _flag(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The option `--include-NAME/--exclude-NAME` (the keyword argument `include_NAME`; None: not given)."""
    return click.option(f"--include-{name}/--exclude-{name}", f"include_{name}", default=None, help=f"Let the chats' {_FLAG_HELP[name]} in (default: CHATETL_EXPORT_INCLUDE_{name.upper()}, else out).")


@dataclass
class _Request:
    """What the options ask for: the formats written to OUT, those bundled in the zip, what goes out of each chat."""

    chosen: tuple[str, ...]
    bundle: tuple[str, ...]
    options: ContentOptions

    @classmethod
    def from_options(cls, formats: tuple[str, ...], zip_formats: str | None, flags: dict[str, bool | None]) -> _Request:
        try:
            chosen = parse_formats(list(formats), with_needed(DEFAULT_FORMATS))
            bundle = parse_formats(zip_formats, ()) if zip_formats else ()
            env = ContentOptions.from_env("EXPORT")
        except ValueError as exc:
            raise click.BadParameter(one_line(str(exc))) from exc
        return cls(chosen, bundle, env.model_copy(update={k: v for k, v in flags.items() if v is not None}))

    def wants(self, format_name: str) -> bool:
        """Whether the format is written, to OUT or into the zip."""
        return format_name in self.chosen or format_name in self.bundle

    @property
    def rendered(self) -> tuple[str, ...]:
        return tuple(f for f in PER_CONVERSATION if self.wants(f))


@dataclass
class _Written:
    """The files in OUT, each conversation's its winning state's, and the archive's rows (the same states').
    What it holds is what is on disk whole, also when writing stopped midway (a full disk)."""

    out: Path
    request: _Request
    files: dict[str, list[Path]] = field(default_factory=dict)  # conversation key -> its files on disk
    rows: dict[str, ArchiveEntry] = field(default_factory=dict)  # conversation key -> its archive row
    records: int = 0  # the training file's
    archived: int = 0  # the archive pages in OUT
    linked: dict[str, list[str]] = field(default_factory=dict)  # conversation key -> the attachment copies its md/html link
    copied: set[str] = field(default_factory=set)  # the copies in OUT/files/

    def copy_files(self, conv: Conversation, names: list[str], store: LocalObjectStore) -> None:
        """The attachment copies `conv`'s md and html files link, into OUT/files/ (each once; the name is the content)."""
        self.linked[conv.key] = names
        if not any(f in self.request.chosen for f in LINKING_FORMATS):
            return
        for name in names:
            source = store.local_path(source_key(name))
            if name in self.copied or source is None:
                continue
            target = _inside(self.out, f"{FILES_FOLDER}/{name}")
            target.parent.mkdir(parents=True, exist_ok=True)
            try:  # (streamed, never whole in memory; a full disk leaves no cut file behind)
                shutil.copyfile(source, target)
            except OSError:
                target.unlink(missing_ok=True)
                raise
            self.copied.add(name)

    def zip_files(self, store: LocalObjectStore) -> list[tuple[str, Path]]:
        """The zip's `files/` members: the copies the winning states' md and html files link."""
        if not any(f in self.request.bundle for f in LINKING_FORMATS):
            return []
        names = sorted({n for names in self.linked.values() for n in names})
        return [(f"{FILES_FOLDER}/{n}", path) for n in names if (path := store.local_path(source_key(n))) is not None]

    def write(self, conv: Conversation, files: list[ExportFile]) -> int:
        """A winning state's files written to OUT, an earlier state's files it does not overwrite removed: how many
        states written before it replaced (1 or 0)."""
        old = self.files.get(conv.key)
        paths: list[Path] = []  # filled as they are written: a full disk midway still counts them
        self.files[conv.key] = paths
        for f in files:
            if f.format in self.request.chosen:
                paths.append(_write_inside(self.out, f.path, f.data))
        if old is not None:  # a winning state of a conversation already written: its stale files go
            for stale in old:
                if stale not in paths:
                    stale.unlink(missing_ok=True)
        if self.request.wants(ARCHIVE):
            self.rows[conv.key] = archive_entry(conv, next((f.path for f in files if f.format == "html"), None))
        return int(old is not None)

    def counts(self) -> dict[str, int]:
        """Files written per chosen format (the training file's records)."""
        counts = dict.fromkeys(self.request.chosen, 0)
        for paths in self.files.values():
            for p in paths:
                counts[p.parent.name] += 1
        if TRAINING in self.request.chosen:
            counts[TRAINING] = self.records
        if ARCHIVE in self.request.chosen:
            counts[ARCHIVE] = self.archived
        return counts


def _write_collected(collector: ExportCollector, written: _Written, store: LocalObjectStore) -> None:
    """What is written once every input is read: the training file, the archive page and the zip (each as
    chosen), counted in `written` as each is done."""
    out, request = written.out, written.request
    chosen, bundle = request.chosen, request.bundle
    records = 0
    # a training file wanted only for the zip is written beside the collector, never into OUT
    training_target = _inside(out, f"{TRAINING}/sharegpt.jsonl") if TRAINING in chosen else collector.workdir / "sharegpt.jsonl"
    if request.wants(TRAINING):
        training_target.parent.mkdir(parents=True, exist_ok=True)
        records = written.records = collector.write_training(training_target)
    page = render_archive(written.rows.values()).encode("utf-8", "replace") if request.wants(ARCHIVE) else b""
    if ARCHIVE in chosen:
        _write_inside(out, f"{ARCHIVE}/{ARCHIVE_PAGE}", page)
        written.archived = 1
    if bundle:
        extra = [(f"{TRAINING}/sharegpt.jsonl", training_target)] if TRAINING in bundle and records else []
        if ARCHIVE in bundle:
            (collector.workdir / "archive.html").write_bytes(page)
            extra.append((f"{ARCHIVE}/{ARCHIVE_PAGE}", collector.workdir / "archive.html"))
        collector.write_zip(_inside(out, "chats.zip"), [*extra, *written.zip_files(store)])
    if TRAINING in chosen and not records:  # nothing to train on: no (stale) training file
        training_target.unlink(missing_ok=True)
        if not any(training_target.parent.iterdir()):
            training_target.parent.rmdir()


@click.command(
    "export",
    short_help="Files to open and keep: an archive page, Markdown, HTML, JSON ...",
    epilog=_FORMAT_HELP + "\n\n" + with_examples(
        "chatetl export ~/Downloads/chatgpt-export.zip --out out      # then open out/archive/index.html",
        "chatetl export claude.zip gemini-takeout.zip --out notes --format md",
        "chatetl export exports/ --out out --format md,html --zip all  # and out/chats.zip",
    ),
)
@click.argument("inputs", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder to write to (made if missing).")
@click.option("--format", "formats", multiple=True, metavar="FORMAT", help="What to write (below); default: archive.")
@click.option("--zip", "zip_formats", default=None, metavar="FORMATS", help="Also write OUT/chats.zip holding these formats (comma-separated, or all).")
@_flag("reasoning")
@_flag("tools")
@_flag("hidden")
@_flag("branches")
@quiet_and_progress
def export(
    inputs: tuple[str, ...], out: Path, formats: tuple[str, ...], zip_formats: str | None, quiet: bool, progress: bool | None,
    **flags: bool | None,
) -> None:
    """Read chat exports (INPUTS: zips, folders, files, s3://bucket/prefix) and write every
    conversation to OUT as files to open: by default an archive page to browse and search them
    all, OUT/archive/index.html, with a page per chat. Needs no Java, Neo4j or server."""
    request = _Request.from_options(formats, zip_formats, flags)
    options, rendered, want_training = request.options, request.rendered, request.wants(TRAINING)
    report = ReadReport()
    out.mkdir(parents=True, exist_ok=True)
    written = _Written(out, request)
    conversations = empty = superseded = exported = 0
    meter = input_meter(inputs, progress, quiet, "export")
    # a full disk (temp or OUT) stops the writing: the summary still says what was written
    with (output_errors(str(out), tempfile.gettempdir()) as stop, temporary_collector(request.bundle) as collector, meter,
          tempfile.TemporaryDirectory(prefix="chatetl-attachments-") as tmp):
        store = LocalObjectStore(tmp)  # (the attachments' bytes, once by content, until they are copied to OUT/files/)
        local = LocalAttachments(inputs, store, report, Path(tmp))
        for conv in read_inputs(inputs, report, meter):
            conversations += 1
            local.resolve(conv)
            conv = with_state_hash(conv, state_hash(conv))  # hashed once: the collector and the archive row order by it
            views = export_views(conv, options)  # one selection of turns for every format and the training lines
            files = conversation_files(conv, rendered, options, views)
            lines = training_lines(conv, options, views) if want_training else []
            if not files and not lines:
                empty += 1
            elif not collector.add(conv, files, lines):  # the state kept already wins (or is this one)
                superseded += 1
            else:
                superseded += written.write(conv, files)
                written.copy_files(conv, linked_names(views), store)
                exported = collector.conversations
        local.close()
        _write_collected(collector, written, store)

    report_errors(report.errors, quiet)
    if stop.reason:
        click.echo(f"error: {stop.reason}", err=True)
    summary: dict[str, object] = {
        "files": report.files,
        "conversations": conversations,
        "exported": exported,
        "written": written.counts(),
        "errors": len(report.errors),
    }
    if written.copied:
        summary["attachments"] = len(written.copied)
    if empty:
        summary["empty"] = empty
    if superseded:
        summary["superseded"] = superseded
    if request.bundle and not stop.reason:
        summary["zip"] = str(out / "chats.zip")
    if stop.reason:
        summary["stopped"] = stop.reason
    click.echo(json.dumps(summary, sort_keys=True))
    sys.exit(INPUT_ERRORS if report.errors or stop.reason else OK)
