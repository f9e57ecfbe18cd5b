"""A deleted upload's attachments leave the bucket with it, on the real S3 server: the files only it referred
to, its by-upload and by-content records; never a file another upload names, and a running ingest that a
sweep overlapped stores again what the sweep took."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

import pytest
from attachments.layouts import UPLOADED, chatgpt_conversation, chatgpt_zip, ingested, png

from chatetl.attachments.manifest import upload_digest
from chatetl.attachments.sweep import release, resolving, sweep
from chatetl.ingest.index import partition_of
from chatetl.ingest.partition import ingest_partition
from chatetl.layout import (
    ATTACHMENTS_IN_FLIGHT_PREFIX,
    ATTACHMENTS_LET_GO_PREFIX,
    ATTACHMENTS_PREFIX,
    attachment_key,
    attachments_of_content_key,
    attachments_of_upload_key,
    attachments_sweeping_key,
    upload_id,
)
from chatetl.samples.common import zip_files
from chatetl.storage import S3ObjectStore, s3_client

SHARED, OWN = (attachment_key(hashlib.sha256(png(n)).hexdigest()) for n in (1, 2))  # png(1): in both uploads
EVERY_FILE = {attachment_key(hashlib.sha256(png(n)).hexdigest()) for n in (1, 2, 3)}  # what chatgpt_zip() holds


def _one_file_zip() -> bytes:
    """Another export holding one file of chatgpt_zip()'s (png(1))."""
    return zip_files({"conversations.json": json.dumps([chatgpt_conversation("one")]), f"{UPLOADED}.dat": png(1)})


def _files(store) -> set[str]:
    return {i.key for i in store.list(ATTACHMENTS_PREFIX)}


def _keys(store, prefix: str) -> list[str]:
    return [i.key for i in store.list(prefix)]


def _run(store) -> None:
    """The normalize stage over the bucket's uploads as they are now."""
    uploads = list(store.list("raw/"))
    for day in sorted({partition_of(u) for u in uploads}):
        ingest_partition(store, day, [u for u in uploads if partition_of(u) == day])


def _day_of(store, key: str) -> str:
    info = store.head(key)
    assert info is not None
    return partition_of(info)


def test_a_deleted_upload_takes_its_unshared_files_and_records_and_keeps_shared_ones(s3_store):
    store = s3_store
    store.put_bytes("raw/a.zip", chatgpt_zip())
    store.put_bytes("raw/b.zip", _one_file_zip())
    a = store.head("raw/a.zip")
    day = _day_of(store, "raw/a.zip")
    ingest_partition(store, day, list(store.list("raw/")))
    a_digest = upload_digest(a.etag, a.size)
    assert _files(store) == EVERY_FILE
    assert store.head(attachments_of_upload_key(upload_id("raw/a.zip"))) is not None
    assert store.head(attachments_of_content_key(a_digest)) is not None
    b_records = [attachments_of_upload_key(upload_id("raw/b.zip")), attachments_of_content_key(upload_digest(*_etag_size(store, "raw/b.zip")))]
    for h in (SHARED, OWN):  # (an exported copy of each: chatetl.exports.attachments)
        store.put_bytes(f"exports/files/{h.rsplit('/', 1)[1]}.png", png(0))

    store.delete("raw/a.zip")
    ingest_partition(store, day, list(store.list("raw/")))
    assert _files(store) == {SHARED}  # b's file stays; a's own files went
    assert store.head(attachments_of_upload_key(upload_id("raw/a.zip"))) is None
    assert store.head(attachments_of_content_key(a_digest)) is None
    assert all(store.head(k) is not None for k in b_records)
    assert _keys(store, "exports/files/") == [f"exports/files/{SHARED.rsplit('/', 1)[1]}.png"]
    assert not _keys(store, ATTACHMENTS_LET_GO_PREFIX) and not _keys(store, ATTACHMENTS_IN_FLIGHT_PREFIX)

    before = sorted(_keys(store, ""))  # the retraction and the sweep again: nothing changes
    assert release(store, upload_id("raw/a.zip")) == [] and sweep(store) == []
    ingest_partition(store, day, list(store.list("raw/")))
    assert sorted(k for k in _keys(store, "") if not k.startswith("state/attachments/swept")) == \
        sorted(k for k in before if not k.startswith("state/attachments/swept"))


def test_a_replay_of_the_deleted_upload_brings_its_files_back(s3_store):
    store = s3_store
    store.put_bytes("raw/a.zip", chatgpt_zip())
    _run(store)
    store.delete("raw/a.zip")
    ingest_partition(store, _day_of_ledger(store), [])
    assert not _files(store) and not _keys(store, "state/attachments/by-")

    store.put_bytes("raw/a.zip", chatgpt_zip())  # the same bytes again
    _run(store)
    assert _files(store) == EVERY_FILE
    for key in EVERY_FILE:
        assert hashlib.sha256(store.get_bytes(key)).hexdigest() == key.rsplit("/", 1)[1]
    assert store.head(attachments_of_upload_key(upload_id("raw/a.zip"))) is not None
    assert store.head(attachments_of_content_key(upload_digest(*_etag_size(store, "raw/a.zip")))) is not None


def test_files_younger_than_the_grace_period_stay_while_an_ingest_is_in_flight(s3_store):
    """An ingest in flight may have stored a file it has not named yet: what is younger than the grace
    period waits for a later sweep; a run that died (its in-flight record older than the grace) protects nothing."""
    store = s3_store
    ingested(store, "raw/a.zip", chatgpt_zip())
    with resolving(store, upload_id("raw/other.zip")):
        assert not set(release(store, upload_id("raw/a.zip"), grace=timedelta(hours=1))) & EVERY_FILE
        assert _files(store) == EVERY_FILE and len(_keys(store, ATTACHMENTS_LET_GO_PREFIX)) == 1
        assert sweep(store, timedelta(hours=1)) == [] and _files(store) == EVERY_FILE  # (still in flight)
    assert set(sweep(store, timedelta(hours=1))) == EVERY_FILE  # that ingest is done: they go
    assert not _files(store) and not _keys(store, ATTACHMENTS_LET_GO_PREFIX)

    ingested(store, "raw/a.zip", chatgpt_zip())
    store.write_bytes(f"{ATTACHMENTS_IN_FLIGHT_PREFIX}dead-run.json", b"{}")  # (a run killed before it removed its record)
    assert not set(release(store, upload_id("raw/a.zip"), grace=timedelta(hours=1))) & EVERY_FILE
    assert _files(store) == EVERY_FILE
    assert set(sweep(store, timedelta(0))) == EVERY_FILE and not _keys(store, ATTACHMENTS_IN_FLIGHT_PREFIX)


class _RetractingOnFind(S3ObjectStore):
    """The real bucket, with one retraction run the moment an ingest finds an attachment already stored."""

    def __init__(self, client, bucket: str, retract) -> None:
        super().__init__(client, bucket)
        self.retract = retract

    def head(self, key):
        info = super().head(key)
        if info is not None and key.startswith(ATTACHMENTS_PREFIX) and self.retract is not None:
            retract, self.retract = self.retract, None
            retract(self)
        return info


@pytest.mark.parametrize("grace", [timedelta(0), timedelta(hours=1)], ids=["taken-then-stored-again", "kept-while-in-flight"])
def test_an_ingest_that_found_a_file_as_its_last_other_upload_left_keeps_it(s3_store, s3_bucket, services, grace):
    """Upload b finds a's file stored; a is deleted and swept before b names the file. Whether the sweep took it
    (b's run looked dead, or the file old) or kept it, b ends holding its bytes."""
    ingested(s3_store, "raw/a.zip", chatgpt_zip())
    store = _RetractingOnFind(s3_client(services["CHATETL_S3_ENDPOINT_URL"]), s3_bucket,
                              lambda s: release(s, upload_id("raw/a.zip"), grace=grace))
    result = ingested(store, "raw/b.zip", _one_file_zip())
    assert store.retract is None and result.attachments.files == 1
    sweep(store, grace)
    assert _files(store) == {SHARED} and store.get_bytes(SHARED) == png(1)
    assert not _keys(store, ATTACHMENTS_LET_GO_PREFIX) and not _keys(store, ATTACHMENTS_IN_FLIGHT_PREFIX)
    assert store.head(attachments_of_upload_key(upload_id("raw/a.zip"))) is None
    assert store.head(attachments_of_upload_key(upload_id("raw/b.zip"))) is not None


class _CountingHeads(S3ObjectStore):
    """The real bucket, counting the HEADs of stored files; `meanwhile` runs once at the first one, on a store
    of its own (its requests not counted)."""

    def __init__(self, client, bucket: str, meanwhile=None) -> None:
        super().__init__(client, bucket)
        self.meanwhile = meanwhile
        self.heads = 0

    def head(self, key):
        if key.startswith(ATTACHMENTS_PREFIX):
            self.heads += 1
            if self.meanwhile is not None:
                meanwhile, self.meanwhile = self.meanwhile, None
                meanwhile(S3ObjectStore(self.client, self.bucket))
        return super().head(key)


def test_an_ingest_checks_its_files_again_only_when_a_sweep_may_have_overlapped_it(s3_store, s3_bucket, services):
    """No sweep since the ingest began: its files are not looked up again (one GET instead of a HEAD each). A
    sweep during the ingest, or one under way (or died under way) as it began: each file is looked up again."""
    client = s3_client(services["CHATETL_S3_ENDPOINT_URL"])
    ingested(s3_store, "raw/a.zip", chatgpt_zip())
    ingested(s3_store, "raw/gone.zip", _one_file_zip())  # (an upload to retract: its file stays, b and c hold it)
    quiet = _CountingHeads(client, s3_bucket)
    ingested(quiet, "raw/b.zip", _one_file_zip())
    assert quiet.heads >= 1  # (the lookup of its one file, found stored)

    swept = _CountingHeads(client, s3_bucket, lambda s: release(s, upload_id("raw/gone.zip")))
    ingested(swept, "raw/c.zip", _one_file_zip())
    assert swept.meanwhile is None and swept.heads == quiet.heads + 1  # (its one file, checked again)

    s3_store.write_bytes(attachments_sweeping_key("died-under-way"), b"{}")
    under_way = _CountingHeads(client, s3_bucket)
    ingested(under_way, "raw/d.zip", _one_file_zip())
    assert under_way.heads == quiet.heads + 1
    again = _CountingHeads(client, s3_bucket)
    ingested(again, "raw/e.zip", _one_file_zip())
    assert again.heads == quiet.heads + 1  # (until a sweep forgets it, or it is older than the grace period)
    s3_store.write_bytes(f"{ATTACHMENTS_LET_GO_PREFIX}x.json", b'{"upload": "x", "files": [], "contents": []}')
    sweep(s3_store, timedelta(0))
    after = _CountingHeads(client, s3_bucket)
    ingested(after, "raw/f.zip", _one_file_zip())
    assert after.heads == quiet.heads and _files(s3_store) == EVERY_FILE


def test_a_file_a_sweep_took_after_the_ingest_checked_it_comes_back_when_the_upload_is_read_again(s3_store):
    """The window the check leaves (a sweep's deletion landing after it): the upload's record names a file the
    bucket lacks; a reprocess run of its day reads the upload again and stores it."""
    store = s3_store
    store.put_bytes("raw/b.zip", _one_file_zip())
    _run(store)
    store.delete(SHARED)  # (as a sweep that read the records before b's was written, deleting after b's check)
    ingest_partition(store, _day_of(store, "raw/b.zip"), list(store.list("raw/")), reprocess=True)
    assert _files(store) == {SHARED} and store.get_bytes(SHARED) == png(1)


def _etag_size(store, key: str) -> tuple[str, int]:
    info = store.head(key)
    assert info is not None
    return info.etag, info.size


def _day_of_ledger(store) -> str:
    """The day whose ledger holds the bucket's uploads (one day in these tests)."""
    (key,) = _keys(store, "state/ledger/")
    return key.removeprefix("state/ledger/date=").removesuffix(".json")
