"""The tests' buckets on the real S3 server: a fresh one, emptied, removed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager


def empty_bucket(client, name: str) -> None:
    """Delete every object of the bucket (state a shared fixture must not carry to the next test)."""
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=name):
        for obj in page.get("Contents", []):
            client.delete_object(Bucket=name, Key=obj["Key"])


@contextmanager
def fresh_bucket(endpoint: str) -> Iterator[str]:
    """A new bucket of its own name, removed afterwards with all it holds."""
    from chatetl.storage import s3_client

    client = s3_client(endpoint)
    name = f"chatetl-test-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    try:
        yield name
    finally:
        empty_bucket(client, name)
        client.delete_bucket(Bucket=name)
