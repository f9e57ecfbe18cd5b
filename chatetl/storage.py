"""The object store the CLI and the Dagster resources share: a local folder or an S3 bucket.

Reads stream (never a whole object in memory), writes are atomic (a reader sees the
old object or the new one, never half), listing pages with StartAfter/continuation.
Keys are always relative, '/'-separated, and may never leave the store's root.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from chatetl.settings import Settings


class UnsafeKeyError(ValueError):
    pass


def check_key(key: str) -> str:
    """A key must be relative and stay inside the store: no '..', no absolute paths, no empty parts."""
    if not key or key.startswith("/") or "\\" in key or "\x00" in key:
        raise UnsafeKeyError(f"unsafe object key: {key!r}")
    parts = PurePosixPath(key).parts
    if any(p in ("..", ".") for p in parts) or key.endswith("/"):
        raise UnsafeKeyError(f"unsafe object key: {key!r}")
    return key


def check_prefix(prefix: str) -> str:
    """A listing prefix or folder-like key ("", "normalized/"): a key that may end in '/'."""
    if prefix:
        check_key(prefix.rstrip("/") or "x")
    return prefix


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    etag: str
    size: int
    last_modified: datetime


class ObjectStore(ABC):
    """Where uploads arrive and every stage writes its outputs."""

    @abstractmethod
    def list(self, prefix: str = "", start_after: str | None = None, limit: int | None = None) -> Iterator[ObjectInfo]:
        """Objects under `prefix` in key order, after `start_after`, at most `limit` of them."""

    @abstractmethod
    def head(self, key: str) -> ObjectInfo | None: ...

    @abstractmethod
    def open(self, key: str) -> BinaryIO:
        """A streaming reader of the object's bytes."""

    def local_path(self, key: str) -> Path | None:
        """The object's file on this machine's disk, when the store keeps it in one (a zip is then
        opened in place and a big array file read in pieces on every core); None for a server."""
        return None

    @abstractmethod
    def put_file(self, key: str, path: str | Path, content_type: str | None = None) -> ObjectInfo:
        """Write the file's bytes at `key`; the object as the store lists it (its time is the store's: the
        sensor and the ledger order uploads by it)."""

    def write_file(self, key: str, path: str | Path, content_type: str | None = None) -> str:
        """`put_file` for an output whose time nobody reads: the ETag written (a server may spare a request)."""
        return self.put_file(key, path, content_type).etag

    def write_bytes(self, key: str, data: bytes, content_type: str | None = None) -> str:
        """`put_bytes` for an output whose time nobody reads: the ETag written."""
        return self.put_bytes(key, data, content_type).etag

    @abstractmethod
    def delete(self, key: str) -> None: ...

    @abstractmethod
    def uri(self, key: str) -> str:
        """Where a person finds the object (s3://... or a local path)."""

    def put_bytes(self, key: str, data: bytes, content_type: str | None = None) -> ObjectInfo:
        fd, tmp = tempfile.mkstemp(prefix="chatetl-put-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return self.put_file(key, tmp, content_type)
        finally:
            os.unlink(tmp)

    def download(self, key: str, path: str | Path) -> Path:
        """Stream the object into a local file (Parquet and zip readers need one); returns the path."""
        with self.open(key) as src, open(path, "wb") as out:
            while chunk := src.read(1024 * 1024):
                out.write(chunk)
        return Path(path)

    def get_bytes(self, key: str) -> bytes:
        with self.open(key) as f:
            return f.read()

    def etag_of(self, path: str | Path) -> str:
        """The ETag `put_file` / `write_file` of this file gives its object here (an MD5 of its bytes)."""
        return file_md5(path)

    def fetch(self, key: str) -> tuple[bytes, str] | None:
        """A small object's bytes and ETag (None: no object), in one request on a server."""
        info = self.head(key)
        return None if info is None else (self.get_bytes(key), info.etag)

    def delete_prefix(self, prefix: str) -> int:
        n = 0
        for info in list(self.list(prefix)):
            self.delete(info.key)
            n += 1
        return n


def file_md5(path: str | Path) -> str:
    """The MD5 hex digest of a file: what an unencrypted S3 single-part ETag is."""
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b""):
            h.update(chunk)
    return h.hexdigest()


class Held(Enum):
    """What a caller of `put_if_changed` may say the key holds instead of an ETag or None (nothing)."""

    ASK = "ask"  # not known: the store is asked (one HEAD)


def put_if_changed(store: ObjectStore, key: str, path: str | Path, content_type: str | None = None,
                   held: str | None | Held = Held.ASK) -> bool:
    """Write unless the object already holds exactly these bytes (its ETag, `etag_of` them); True when
    written. A rerun that produces the same bytes leaves the object, and its ETag, alone. `held`: the
    ETag the key holds (None: no object) where the caller just read it, which spares asking the store."""
    if held is Held.ASK:
        old = store.head(key)
        held = old.etag if old is not None and old.size == os.path.getsize(path) else None
    if held is not None and held == store.etag_of(path):
        return False
    store.write_file(key, path, content_type)
    return True


def put_bytes_if_changed(store: ObjectStore, key: str, data: bytes, content_type: str | None = None,
                         held: str | None | Held = Held.ASK) -> bool:
    """`put_if_changed` for bytes in memory."""
    if held is Held.ASK:
        old = store.head(key)
        held = old.etag if old is not None and old.size == len(data) else None
    if held is not None and held == hashlib.md5(data, usedforsecurity=False).hexdigest():
        return False
    store.write_bytes(key, data, content_type)
    return True


class LocalObjectStore(ObjectStore):
    """A folder on disk standing in for a bucket: the embedded default, no server needed."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        path = (self.root / check_key(key)).resolve()
        if self.root not in path.parents:
            raise UnsafeKeyError(f"object key leaves the store: {key!r}")
        return path

    def _info(self, key: str, path: Path) -> ObjectInfo:
        st = path.stat()
        return ObjectInfo(key=key, etag=file_md5(path), size=st.st_size, last_modified=datetime.fromtimestamp(st.st_mtime, tz=UTC))

    def list(self, prefix: str = "", start_after: str | None = None, limit: int | None = None) -> Iterator[ObjectInfo]:
        keys = []
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                if name.startswith(".chatetl-tmp-"):
                    continue
                key = Path(dirpath, name).relative_to(self.root).as_posix()
                if key.startswith(prefix) and (start_after is None or key > start_after) and self._inside(key):
                    keys.append(key)
        keys.sort()
        for i, key in enumerate(keys):
            if limit is not None and i >= limit:
                return
            yield self._info(key, self.root / key)

    def _inside(self, key: str) -> bool:
        """A listed file that is really in the store: a symlink out of it (or a dangling one) is not an object."""
        try:
            return self._path(key).is_file()
        except (UnsafeKeyError, OSError):
            return False

    def head(self, key: str) -> ObjectInfo | None:
        path = self._path(key)
        return self._info(key, path) if path.is_file() else None

    def open(self, key: str) -> BinaryIO:
        return open(self._path(key), "rb")

    def local_path(self, key: str) -> Path | None:
        return self._path(key)

    def fetch(self, key: str) -> tuple[bytes, str] | None:
        try:
            data = self._path(key).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return None
        return data, hashlib.md5(data, usedforsecurity=False).hexdigest()

    def put_file(self, key: str, path: str | Path, content_type: str | None = None) -> ObjectInfo:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".chatetl-tmp-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
                while chunk := src.read(1024 * 1024):
                    out.write(chunk)
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return self._info(key, target)

    def delete(self, key: str) -> None:
        path = self._path(key)
        if path.exists():
            path.unlink()

    def uri(self, key: str) -> str:
        check_prefix(key)
        return str(self.root / key)


MULTIPART_THRESHOLD = 8 * 1024 * 1024  # a file this big is written in parts of this size (upload_file, boto3's defaults)
MAX_PARTS = 10_000  # S3's: a bigger file's parts are larger (s3transfer doubles the size until they fit)


class S3ObjectStore(ObjectStore):
    """An S3 bucket (AWS, SeaweedFS, MinIO ...) under an optional key prefix."""

    def __init__(self, client: Any, bucket: str, prefix: str = "") -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    def _info(self, full_key: str, etag: str, size: int, last_modified: datetime) -> ObjectInfo:
        return ObjectInfo(key=full_key[len(self.prefix):], etag=etag.strip('"'), size=size, last_modified=last_modified)

    def list(self, prefix: str = "", start_after: str | None = None, limit: int | None = None) -> Iterator[ObjectInfo]:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": self.prefix + prefix}
        if start_after:
            kwargs["StartAfter"] = self.prefix + start_after
        n = 0
        while True:
            if limit is not None:
                kwargs["MaxKeys"] = max(1, min(1000, limit - n))
            page = self.client.list_objects_v2(**kwargs)
            for obj in page.get("Contents", []):
                yield self._info(obj["Key"], obj["ETag"], obj["Size"], obj["LastModified"])
                n += 1
                if limit is not None and n >= limit:
                    return
            if not page.get("IsTruncated"):
                return
            kwargs.pop("StartAfter", None)
            kwargs["ContinuationToken"] = page["NextContinuationToken"]

    def _answer(self, call: Any, key: str) -> dict[str, Any] | None:
        """S3's answer to `call` (head_object, get_object) for the key; None: no such object."""
        from botocore.exceptions import ClientError

        try:
            return dict(call(Bucket=self.bucket, Key=self._key(key)))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise

    def head(self, key: str) -> ObjectInfo | None:
        r = self._answer(self.client.head_object, key)
        return None if r is None else self._info(self._key(key), r["ETag"], r["ContentLength"], r["LastModified"])

    def fetch(self, key: str) -> tuple[bytes, str] | None:
        r = self._answer(self.client.get_object, key)
        if r is None:
            return None
        with closing(r["Body"]) as body:
            return body.read(), str(r["ETag"]).strip('"')

    def open(self, key: str) -> BinaryIO:
        body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
        return io.BufferedReader(_StreamingBody(body), buffer_size=1024 * 1024)

    def put_file(self, key: str, path: str | Path, content_type: str | None = None) -> ObjectInfo:
        self._upload(key, path, content_type)
        return self._written(key)

    def put_bytes(self, key: str, data: bytes, content_type: str | None = None) -> ObjectInfo:
        self.write_bytes(key, data, content_type)
        return self._written(key)

    def write_file(self, key: str, path: str | Path, content_type: str | None = None) -> str:
        etag = self._upload(key, path, content_type)
        return etag if etag is not None else self._written(key).etag

    def _upload(self, key: str, path: str | Path, content_type: str | None) -> str | None:
        """The file written at `key`; its ETag, when the answer gave it (not for a file written in parts)."""
        if os.path.getsize(path) < MULTIPART_THRESHOLD:
            with open(path, "rb") as body:
                return self.write_bytes(key, body.read(), content_type)
        # upload_file writes a big file in parts (an ETag that is no MD5); the object appears only when complete
        from boto3.s3.transfer import TransferConfig

        extra = {"ContentType": content_type} if content_type else None
        config = TransferConfig(multipart_threshold=MULTIPART_THRESHOLD, multipart_chunksize=MULTIPART_THRESHOLD)
        self.client.upload_file(str(path), self.bucket, self._key(key), ExtraArgs=extra, Config=config)
        return None

    def etag_of(self, path: str | Path) -> str:
        """The ETag S3 gives the file written here: its MD5, or for a file written in parts, the MD5 of its
        parts' MD5s and their count (so an unchanged big file is known as such, and not written again)."""
        size = os.path.getsize(path)
        if size < MULTIPART_THRESHOLD:
            return file_md5(path)
        part = MULTIPART_THRESHOLD
        while -(-size // part) > MAX_PARTS:
            part *= 2
        digests = hashlib.md5(usedforsecurity=False)
        count = 0
        with open(path, "rb") as f:
            while block := f.read(part):
                digests.update(hashlib.md5(block, usedforsecurity=False).digest())
                count += 1
        return f"{digests.hexdigest()}-{count}"

    def write_bytes(self, key: str, data: bytes, content_type: str | None = None) -> str:
        extra = {"ContentType": content_type} if content_type else {}
        response = self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, **extra)
        return str(response["ETag"]).strip('"')

    def _written(self, key: str) -> ObjectInfo:
        info = self.head(key)
        assert info is not None
        return info

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}{check_prefix(key)}"


class _StreamingBody(io.RawIOBase):
    """botocore's StreamingBody as a raw binary stream; `open` wraps it in a BufferedReader,
    so callers get read/readline/iteration/read1 as from a local file, streamed."""

    def __init__(self, body: Any) -> None:
        self._body = body

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._body.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        return n

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()


def s3_client(endpoint_url: str | None = None, region: str | None = None) -> Any:
    """A boto3 S3 client (region: AWS_REGION, else us-east-1); credentials come from the environment
    (never from code or logs). The Dagster resource (resources.object_store) makes the same client."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint_url or None,
        region_name=region or Settings.from_env().aws_region or "us-east-1",
        config=Config(retries={"max_attempts": 5, "mode": "standard"}, s3={"addressing_style": "path"}),
    )


_REFUSED_CREDENTIALS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken", "InvalidToken",
                        "InvalidClientTokenId", "AuthorizationHeaderMalformed", "Forbidden", "403"}


def s3_failure(exc: BaseException) -> str | None:
    """One line saying why S3 refused or could not be reached (no credential in it), for an error
    boto3 raises; None for anything else (a bug: its traceback is the useful thing)."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
    )

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or "")
        if code in _REFUSED_CREDENTIALS:
            return (f"the S3 server refused the credentials ({code}): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
                    " (and AWS_SESSION_TOKEN)")
        if code in ("NoSuchBucket", "404"):
            return "no such bucket (CHATETL_S3_BUCKET, or the bucket in the s3:// address)"
        return f"S3 refused the request ({code}: {error.get('Message') or 'no message'})"
    if isinstance(exc, NoCredentialsError):
        return "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    if isinstance(exc, EndpointConnectionError):
        return f"the S3 server does not answer at {exc.kwargs.get('endpoint_url')} (CHATETL_S3_ENDPOINT_URL)"
    if isinstance(exc, BotoCoreError):
        return f"S3 failed: {exc}"
    return None
