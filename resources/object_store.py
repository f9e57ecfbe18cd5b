"""The object store resource: one abstract resource, a local-folder and an S3 implementation.

The S3 one is built on dagster-aws's `S3Resource` (nested: its endpoint and region are config,
the client comes from its `get_client()`), with chatetl's client settings on top: boto3's
standard retry mode with 5 attempts (S3Resource's default) and path-style addressing (as
chatetl.storage.s3_client: SeaweedFS, MinIO and a compose service name have no per-bucket
host names). Credentials never appear in config: boto3 reads them from the environment (or an
instance role).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from dagster import ConfigurableResource
from dagster_aws.s3 import S3Resource
from pydantic import Field, PrivateAttr

from chatetl.storage import LocalObjectStore, ObjectStore, S3ObjectStore
from resources.env import resolved


class ObjectStoreResource(ConfigurableResource):  # type: ignore[type-arg]  # Dagster's resources subclass it as it is
    """Where uploads arrive and where every stage writes. Assets only see `store`."""

    _store: ObjectStore | None = PrivateAttr(default=None)

    @abstractmethod
    def make_store(self) -> ObjectStore: ...

    @property
    def store(self) -> ObjectStore:
        if self._store is None:
            self._store = resolved(self).make_store()
        return self._store


class LocalObjectStoreResource(ObjectStoreResource):
    """A folder standing in for the bucket: the embedded default, no server needed."""

    root: str = Field(description="Folder that plays the bucket (CHATETL_LOCAL_STORE_ROOT)")

    def make_store(self) -> ObjectStore:
        return LocalObjectStore(self.root)


def path_style(client: Any) -> Any:
    """The client addresses buckets by path (`endpoint/bucket/key`), never by host name."""

    def force(builtins: dict[str, Any], **_: Any) -> None:
        builtins["AWS::S3::ForcePathStyle"] = True

    client.meta.events.register("before-endpoint-resolution.s3", force)
    return client


class S3ObjectStoreResource(ObjectStoreResource):
    """An S3 bucket (AWS, SeaweedFS, MinIO), reached through dagster-aws's S3Resource."""

    bucket: str = Field(description="The bucket (CHATETL_S3_BUCKET)")
    prefix: str = Field(default="", description="Key prefix inside the bucket (CHATETL_S3_PREFIX)")
    s3: S3Resource = Field(description="Endpoint (CHATETL_S3_ENDPOINT_URL, none for AWS) and region (AWS_REGION); credentials from the environment")

    def make_store(self) -> ObjectStore:
        return S3ObjectStore(path_style(self.s3.get_client()), self.bucket, self.prefix)
