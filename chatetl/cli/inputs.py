"""Where the commands find their inputs: `iter_inputs` (conversations), `iter_leaves` (the chat
files inside them), `read_inputs` (the conversations of the leaves, counted by an `InputMeter`)
and `input_meter` (the meter for a command's `--progress` / `--quiet`). Local files, folders and
zips, and s3://bucket/prefix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from chatetl.cli.progress import InputMeter, leaf_bytes, show_progress
from chatetl.model import Conversation
from chatetl.readers import ReadReport, _read_leaves, read_entries, read_path
from chatetl.readers.entry import Entry
from chatetl.settings import Settings
from chatetl.storage import S3ObjectStore, s3_client, s3_failure


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


__all__ = ["input_meter", "iter_inputs", "iter_leaves", "read_inputs"]
