"""The partitions of the tests' runs: the groups of uploads (an uploader's of a day) added to the
instance, as the sensor adds them in production (assets/partitions.py)."""

from __future__ import annotations

from typing import Any

from assets.partitions import upload_partitions
from chatetl.ingest.groups import UploadGroup, group_of
from chatetl.ingest.index import partition_of
from chatetl.ingest.ledger import day_uploaders
from chatetl.layout import RAW_PREFIX, is_upload
from chatetl.storage import ObjectInfo, ObjectStore


def added(instance, *keys: str) -> str:
    """The partitions `keys` added to the instance; the first one."""
    instance.add_dynamic_partitions(upload_partitions.name, list(keys))
    return keys[0]


def partition_for(instance, info: ObjectInfo) -> str:
    """The partition of the upload's group, added to the instance."""
    return added(instance, group_of(info).key)


def day_partitions(instance, store: ObjectStore, day: str) -> list[str]:
    """The partitions of every group with uploads on `day` (each uploader's) or a ledger of it (uploads deleted
    since: the sensor requests that group's run), added to the instance."""
    keys = {group_of(o).key for o in store.list(RAW_PREFIX) if is_upload(o.key) and partition_of(o) == day}
    keys = sorted(keys | {UploadGroup(day, uploader).key for uploader in day_uploaders(store, day)})
    added(instance, *keys)
    return keys


def run_day(job, instance, store: ObjectStore, day: str, **kwargs: Any) -> list[Any]:
    """The job run for each group of `day`, one after another: each run's result."""
    return [job.execute_in_process(partition_key=key, instance=instance, **kwargs) for key in day_partitions(instance, store, day)]
