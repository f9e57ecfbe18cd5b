"""The object store: the local folder (unit) and the real S3 server (integration)."""

from __future__ import annotations

import hashlib
import os
import threading

import pytest

from chatetl.storage import LocalObjectStore, UnsafeKeyError, put_bytes_if_changed, put_if_changed


def _exercise(store) -> None:
    data = {f"raw/{i:03d}.json": f'{{"n": {i}}}'.encode() for i in range(7)}
    for key, value in data.items():
        info = store.put_bytes(key, value)
        assert info.etag == hashlib.md5(value).hexdigest()
        assert info.size == len(value)
    store.put_bytes("other/x.txt", b"x")
    assert [o.key for o in store.list("raw/")] == sorted(data)
    assert [o.key for o in store.list("raw/", start_after="raw/004.json")] == ["raw/005.json", "raw/006.json"]
    assert [o.key for o in store.list("raw/", limit=3)] == ["raw/000.json", "raw/001.json", "raw/002.json"]
    with store.open("raw/003.json") as f:
        assert f.read(2) == b'{"'
        assert f.read() == b'n": 3}'
    assert store.head("raw/missing.json") is None
    store.put_bytes("raw/003.json", b"replaced")
    assert store.get_bytes("raw/003.json") == b"replaced"
    store.delete("raw/003.json")
    assert store.head("raw/003.json") is None
    for bad in ("../escape", "/abs", "a/../../b", "raw/", ""):
        with pytest.raises(UnsafeKeyError):
            store.put_bytes(bad, b"x")


def _outputs(store, tmp_path) -> None:
    """What the stages write through: a write's ETag, a small object read with its ETag, a write skipped or done on
    the ETag its caller says the key holds."""
    data = b'{"a": 1}\n'
    assert store.write_bytes("out/a.json", data, "application/json") == hashlib.md5(data).hexdigest()
    assert store.fetch("out/a.json") == (data, hashlib.md5(data).hexdigest())
    assert store.fetch("out/missing.json") is None
    path = tmp_path / "b.bin"
    path.write_bytes(b"b" * 1000)
    assert store.write_file("out/b.bin", path) == store.head("out/b.bin").etag == hashlib.md5(b"b" * 1000).hexdigest()
    etag = store.head("out/a.json").etag
    assert not put_bytes_if_changed(store, "out/a.json", data)  # (asked: the same bytes)
    assert not put_bytes_if_changed(store, "out/a.json", data, held=etag)
    assert put_bytes_if_changed(store, "out/a.json", b"new", held=etag)
    assert store.get_bytes("out/a.json") == b"new"
    assert put_bytes_if_changed(store, "out/c.json", data, held=None)  # (nothing there, as its caller knows)
    assert store.get_bytes("out/c.json") == data
    assert not put_if_changed(store, "out/b.bin", path, held=store.head("out/b.bin").etag)
    assert put_if_changed(store, "out/d.bin", path, held=None) and store.get_bytes("out/d.bin") == b"b" * 1000


def test_local_store(tmp_path):
    _exercise(LocalObjectStore(tmp_path / "bucket"))
    assert not (tmp_path / "escape").exists()
    _outputs(LocalObjectStore(tmp_path / "outputs"), tmp_path)


def test_local_store_writes_are_atomic(tmp_path):
    """A reader sees the old object or the new one, never a partial write."""
    store = LocalObjectStore(tmp_path)
    old, new = b"a" * 2_000_000, b"b" * 3_000_000
    store.put_bytes("k", old)
    seen: set[int] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            seen.add(len(store.get_bytes("k")))

    t = threading.Thread(target=reader)
    t.start()
    for _ in range(5):
        store.put_bytes("k", new)
        store.put_bytes("k", old)
    stop.set()
    t.join()
    assert seen <= {len(old), len(new)}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".chatetl-tmp-")]


def test_local_store_lists_no_symlink_out_of_it(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    store = LocalObjectStore(tmp_path / "bucket")
    store.put_bytes("raw/a.json", b"{}")
    os.symlink(secret, store.root / "raw" / "link.json")
    os.symlink(tmp_path / "missing", store.root / "raw" / "dangling.json")
    os.symlink(store.root / "raw" / "a.json", store.root / "raw" / "inside.json")
    assert [o.key for o in store.list("raw/")] == ["raw/a.json", "raw/inside.json"]


@pytest.mark.integration
def test_s3_store(s3_store, tmp_path):
    _exercise(s3_store)
    _outputs(s3_store, tmp_path)


@pytest.mark.integration
def test_s3_output_writes_ask_only_what_they_do_not_know(s3_store):
    """An output written is one PUT (its ETag in the answer), a small object read one GET; the store is asked what
    a key holds only where its caller does not know."""
    calls: list[str] = []

    def record(model, **_):  # type: ignore[no-untyped-def]
        calls.append(model.name)

    s3_store.client.meta.events.register("before-call.s3", record)
    try:
        assert put_bytes_if_changed(s3_store, "out/new.json", b"{}", held=None)
        assert calls == ["PutObject"]
        _, etag = s3_store.fetch("out/new.json")
        assert calls[1:] == ["GetObject"]
        assert not put_bytes_if_changed(s3_store, "out/new.json", b"{}", held=etag)
        assert put_bytes_if_changed(s3_store, "out/new.json", b"[]")
        assert calls[2:] == ["HeadObject", "PutObject"]
    finally:
        s3_store.client.meta.events.unregister("before-call.s3", record)


@pytest.mark.integration
def test_s3_listing_pages_through_continuation(s3_store, monkeypatch):
    for i in range(25):
        s3_store.put_bytes(f"raw/{i:03d}", b"x")
    calls = []
    real = s3_store.client.list_objects_v2

    def spy(**kwargs):
        kwargs["MaxKeys"] = 10  # force several pages
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(s3_store.client, "list_objects_v2", spy)
    keys = [o.key for o in s3_store.list("raw/", start_after="raw/002")]
    assert keys == [f"raw/{i:03d}" for i in range(3, 25)]
    assert len(calls) == 3 and "ContinuationToken" in calls[-1]


@pytest.mark.integration
def test_s3_streams_large_object_and_multipart(s3_store, tmp_path):
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.writelines(bytes([i]) * 1024 * 1024 for i in range(40))  # 40 MiB: upload_file goes multipart
    info = s3_store.put_file("raw/big.bin", big)
    assert info.size == 40 * 1024 * 1024
    assert s3_store.etag_of(big) == info.etag and info.etag.endswith("-5")  # (written in parts: known before writing)
    assert not put_if_changed(s3_store, "raw/big.bin", big)  # an unchanged big file is not written again
    total = 0
    with s3_store.open("raw/big.bin") as f:
        while chunk := f.read(1024 * 1024):
            assert len(chunk) <= 1024 * 1024
            total += len(chunk)
    assert total == info.size
