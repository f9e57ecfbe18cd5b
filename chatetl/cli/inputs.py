"""Where the commands find their inputs: `iter_inputs` (conversations), `iter_chat_files` (the chat
files inside them), `chat_file_groups` (those chat files in the groups normalize reads on two cores, big zips in
S3 copied first), `read_inputs` (the conversations of the chat files, counted by an `InputMeter`),
`s3_bytes` (what an S3 prefix holds) and `input_meter` (the meter for a command's `--progress` /
`--quiet`). Local files, folders and zips, and s3://bucket/prefix."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import groupby
from operator import itemgetter
from pathlib import Path

from chatetl.cli.progress import InputMeter, chat_file_bytes, show_progress
from chatetl.model import Conversation
from chatetl.readers import ReadReport, read_chat_files, read_entries, read_path
from chatetl.readers.entry import Entry
from chatetl.settings import Settings
from chatetl.storage import S3ObjectStore, s3_client, s3_failure

COPY_MIN_BYTES = 32 * 1024 * 1024
"""A zip in S3 at least this big is copied to local disk before normalize reads it on two cores (`chat_file_groups`):
its array members are then read whole, each by whichever process is free, as a local zip's are (sharded 200 MB
ChatGPT zip from the local S3 server, 4 alternating runs: 2.38-2.46 s read from the stream, 1.98-2.09 s copied
first). An array file is not copied: its records are cut from the stream as it arrives and converted on both cores
(200 MB ChatGPT file: 2.44-2.82 s from the stream, 3.45-3.91 s copied first and read in pieces, the copy itself
0.5-2.0 s on this machine's disk). chatetl.normalize.workers.AUTO_MIN_BYTES: where two cores start to pay at all."""

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


def iter_chat_files(inputs: tuple[str, ...], report: ReadReport) -> Iterator[tuple]:
    """The chat files of the inputs, in the order `iter_inputs` reads them."""
    from chatetl.readers.inputs.archive import expand, expand_path

    for item in inputs:
        if item.startswith("s3://"):
            for entry in _s3_entries(item, report):
                yield from expand(entry, report)
        else:
            yield from expand_path(Path(item), report)


def chat_file_groups(inputs: tuple[str, ...], report: ReadReport, copy_to: Path | None = None) -> Iterator[Iterable[tuple]]:
    """The leaves of `iter_chat_files`, in groups to be read one after the other, each whole before the next is asked for
    (normalize: chatetl.normalize.pool.read_into on each). Without `copy_to`: one group. With it, each zip in S3 of
    COPY_MIN_BYTES or more is copied (streamed) into `copy_to` first and is a group of its own, read from the copy
    under its s3:// name, so its members are read on every core as a local zip's are; the copy is removed when the
    next group is asked for. The leaves between such zips are one group. A zip that cannot be copied is reported
    (an S3 failure, one line) and skipped, as reading it would be."""
    if copy_to is None:
        yield iter_chat_files(inputs, report)
        return
    from chatetl.readers.inputs.archive import copied_if_zip, expand, expand_path

    def items() -> Iterator[tuple[int, Path | Entry | None, tuple | None]]:
        """(n, the n-th zip's copy, its entry) for each zip copied, else (0, None, leaf)."""
        copied = 0
        for item in inputs:
            if not item.startswith("s3://"):
                yield from ((0, None, leaf) for leaf in expand_path(Path(item), report))
                continue
            for entry in _s3_entries(item, report):
                path = copy_to / f"object-{copied + 1:06d}.zip"
                try:
                    is_copy = (entry.size or 0) >= COPY_MIN_BYTES and copied_if_zip(entry, path)
                except Exception as exc:
                    path.unlink(missing_ok=True)
                    why = s3_failure(exc)
                    if why is None:
                        raise
                    report.error(entry.name, "", why)
                    continue
                if is_copy:
                    copied += 1
                    yield copied, path, entry
                else:
                    yield from ((0, None, leaf) for leaf in expand(entry, report))

    for n, run in groupby(items(), key=itemgetter(0)):
        if not n:
            yield (leaf for _, _, leaf in run)
            continue
        [(_, path, entry)] = run
        try:
            yield expand(Entry.from_path(path, name=entry.name), report)
        finally:
            path.unlink(missing_ok=True)


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


__all__ = ["COPY_MIN_BYTES", "input_meter", "iter_inputs", "iter_chat_files", "chat_file_groups", "read_inputs", "s3_bytes"]
