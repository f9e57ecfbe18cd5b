"""The object store resource: one abstract resource, a local-folder and an S3 implementation."""

from __future__ import annotations

from abc import abstractmethod

from dagster import ConfigurableResource
from pydantic import Field, PrivateAttr

from chatetl.storage import LocalObjectStore, ObjectStore, S3ObjectStore, s3_client


class ObjectStoreResource(ConfigurableResource):
    """Where uploads arrive and where every stage writes. Assets only see `store`."""

    _store: ObjectStore | None = PrivateAttr(default=None)

    @abstractmethod
    def make_store(self) -> ObjectStore: ...

    @property
    def store(self) -> ObjectStore:
        if self._store is None:
            self._store = self.make_store()
        return self._store


class LocalObjectStoreResource(ObjectStoreResource):
    """A folder standing in for the bucket: the embedded default, no server needed."""

    root: str = Field(description="Folder that plays the bucket")

    def make_store(self) -> ObjectStore:
        return LocalObjectStore(self.root)


class S3ObjectStoreResource(ObjectStoreResource):
    """An S3 bucket (AWS, SeaweedFS, MinIO). Credentials come from the environment
    (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or an instance role), never from config."""

    bucket: str
    prefix: str = ""
    endpoint_url: str | None = Field(default=None, description="e.g. http://127.0.0.1:8333 for the local SeaweedFS")
    region: str | None = None

    def make_store(self) -> ObjectStore:
        return S3ObjectStore(s3_client(self.endpoint_url, self.region), self.bucket, self.prefix)
