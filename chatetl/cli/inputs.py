"""Where the commands find their inputs (local files, folders and zips, and s3://bucket/prefix):
`iter_inputs` (conversations), `iter_chat_files` (the chat files inside them), `input_sources` (what
chatetl.normalize reads) and `s3_bytes` (what an S3 prefix holds), `read_inputs` (the conversations of the chat
files, counted by an `InputMeter`) and `input_meter` (the meter for a command's `--progress` / `--quiet`)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

from chatetl.cli.progress import InputMeter, chat_file_bytes, show_progress
from chatetl.model import Conversation
from chatetl.readers import ReadReport, read_chat_files
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import ChatFile, expand, expand_path
from chatetl.settings import Settings
from chatetl.storage import S3ObjectStore, s3_client, s3_failure


def _s3_store(uri: str) -> tuple[S3ObjectStore, str]:
    bucket, _, prefix = uri[len("s3://"):].partition("/")
    return S3ObjectStore(s3_client(Settings.from_env().s3_endpoint_url), bucket), prefix


def s3_bytes(uri: str) -> int | None:
    """The bytes of the objects under an s3:// input (one listing), None when it cannot be listed (reading
    it reports why)."""
    store, prefix = _s3_store(uri)
    try:
        return sum(info.size for info in store.list(prefix))
    except Exception as exc:
        if s3_failure(exc) is None:
            raise
        return None


def _s3_entries(uri: str, report: ReadReport) -> Iterator[Entry]:
    store, prefix = _s3_store(uri)
    found = False
    try:
        for info in store.list(prefix):
            found = True
            yield Entry(name=store.uri(info.key), opener=partial(store.open, info.key), size=info.size)
    except Exception as exc:  # refused credentials, no bucket, no server: one line, not a traceback
        why = s3_failure(exc)
        if why is None:
            raise
        report.error(uri, "", why)
        return
    if not found:
        report.error(uri, "", "no objects under this prefix")


def input_sources(inputs: tuple[str, ...], report: ReadReport) -> Iterator[Entry | Path]:
    """The inputs as what chatetl.normalize reads: local files and folders as paths, the objects under an
    s3:// prefix as entries (listed as they are read; a listing that fails is reported in its place)."""
    for item in inputs:
        if item.startswith("s3://"):
            yield from _s3_entries(item, report)
        else:
            yield Path(item)


def iter_inputs(inputs: tuple[str, ...], report: ReadReport) -> Iterator[Conversation]:
    return read_chat_files(iter_chat_files(inputs, report), report)


def iter_chat_files(inputs: tuple[str, ...], report: ReadReport) -> Iterator[ChatFile]:
    """The chat files of the inputs, in the order `iter_inputs` reads them."""
    for source in input_sources(inputs, report):
        yield from expand(source, report) if isinstance(source, Entry) else expand_path(source, report)


def read_inputs(inputs: tuple[str, ...], report: ReadReport, meter: InputMeter) -> Iterator[Conversation]:
    """The conversations `iter_inputs` gives, read file by file through `meter` (and counted by it)."""
    return iter(meter.conversations(read_chat_files(meter.chat_files(iter_chat_files(inputs, report)), report)))


def input_meter(inputs: tuple[str, ...], progress: bool | None, quiet: bool, label: str) -> InputMeter:
    """The meter for a command's `--progress` / `--quiet`; its total (the chat files' bytes) only for local inputs."""
    show = show_progress(progress, quiet)
    total = None
    if show and not any(item.startswith("s3://") for item in inputs):
        total = chat_file_bytes(iter_chat_files(inputs, ReadReport()))  # a listing only: its findings are the real pass's
    return InputMeter(show, total, label)


__all__ = ["input_meter", "input_sources", "iter_chat_files", "iter_inputs", "read_inputs", "s3_bytes"]
