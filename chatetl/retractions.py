"""Retractions: conversations that left the bucket with an upload, to be taken out of every output.

The normalize stage (chatetl.ingest.partition) writes one record when an upload's outputs leave a
day (the upload was deleted from raw/, or replaced and moved to another day) and when a new
version of an upload no longer holds some of its conversations:

    state/retractions/date=D/<digest>.json          {"day", "upload", "why", "conversations": [keys]}
    state/retractions/date=D/<digest>.json.<stage>   the stage (graph, documents, exports) applied it

D is the day of the run that found the change. Each later stage of a run of D applies the records
it has not applied yet (`pending`), then marks them (`mark_applied`); when every stage has, the
record goes. Applying one: for each conversation, `holders` finds the uploads that still hold it
(every day's normalized conversations table, the `conversation_key` column only); a conversation
none holds leaves the stage's output, one another upload holds is taken out and written again from
the holders' states (model.state_order: the newest of them wins). Finding holders reads one column of
every normalized conversations file of the bucket, once per run that has records to apply:
retractions are rare (a deletion, a replaced upload), the scan is what makes them exact.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from chatetl.layout import NORMALIZED_PREFIX, STATE_PREFIX, table_key
from chatetl.model import Conversation
from chatetl.storage import ObjectStore
from chatetl.tables import download_table, iter_conversations, read_rows

RETRACTIONS_PREFIX = f"{STATE_PREFIX}retractions/"
STAGES = ("graph", "documents", "exports")
_CONVERSATION_TABLES = f"{NORMALIZED_PREFIX}conversations/"


@dataclass(frozen=True)
class Retraction:
    key: str  # the record's key in the bucket
    day: str  # the run's day
    upload: str
    why: str
    conversations: tuple[str, ...]


def retractions_prefix(day: str) -> str:
    return f"{RETRACTIONS_PREFIX}date={day}/"


def record_retraction(store: ObjectStore, day: str, upload: str, why: str, conversations: Iterable[str]) -> str | None:
    """Record that these conversations left with `upload` (None when there are none); named by content,
    so recording the same retraction twice writes one record."""
    keys = sorted(set(conversations))
    if not keys:
        return None
    body = {"day": day, "upload": upload, "why": why, "conversations": keys}
    data = json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True).encode("utf-8", "surrogatepass")
    key = f"{retractions_prefix(day)}{hashlib.sha256(data).hexdigest()[:24]}.json"
    store.write_bytes(key, data, "application/json")
    for stage in STAGES:  # recorded again (the upload came back and left again): every stage applies it again
        if store.head(f"{key}.{stage}") is not None:
            store.delete(f"{key}.{stage}")
    return key


def pending(store: ObjectStore, day: str, stage: str) -> list[Retraction]:
    """The day's records `stage` has not applied yet, oldest first."""
    objects = {o.key: o for o in store.list(retractions_prefix(day))}
    out = []
    for key, info in sorted(objects.items(), key=lambda kv: (kv[1].last_modified, kv[0])):
        if not key.endswith(".json") or f"{key}.{stage}" in objects:
            continue
        body = json.loads(store.get_bytes(key))
        out.append(Retraction(key, body["day"], body["upload"], body["why"], tuple(body["conversations"])))
    return out


def mark_applied(store: ObjectStore, records: Iterable[Retraction], stage: str) -> None:
    """`stage` applied these records; a record every stage has applied is removed."""
    for rec in records:
        store.write_bytes(f"{rec.key}.{stage}", b"", "text/plain")
        if all(store.head(f"{rec.key}.{s}") is not None for s in STAGES):
            for s in STAGES:
                store.delete(f"{rec.key}.{s}")
            store.delete(rec.key)


def retracted_keys(records: Iterable[Retraction]) -> set[str]:
    return {k for rec in records for k in rec.conversations}


def holders(store: ObjectStore, keys: set[str]) -> dict[str, list[tuple[str, str]]]:
    """For each key, the (day, upload id) of every normalized upload holding it now."""
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    if not keys:
        return found
    for info in store.list(_CONVERSATION_TABLES):
        rest = info.key[len(_CONVERSATION_TABLES):]
        if not rest.startswith("date=") or not rest.endswith(".parquet") or rest.count("/") != 1:
            continue
        day_part, name = rest.split("/")
        day, uid = day_part.removeprefix("date="), name.removesuffix(".parquet")
        with tempfile.TemporaryDirectory(prefix="chatetl-holders-") as tmp:
            path = download_table(store, info.key, tmp)
            held = {row["conversation_key"] for row in read_rows(path, ["conversation_key"])} & keys
        for key in sorted(held):
            found[key].append((day, uid))
    return found


def holder_states(store: ObjectStore, found: dict[str, list[tuple[str, str]]]) -> dict[str, list[Conversation]]:
    """Every state the holders hold of these conversations, read back from their tables."""
    per_upload: dict[tuple[str, str], set[str]] = defaultdict(set)
    for key, places in found.items():
        for place in places:
            per_upload[place].add(key)
    states: dict[str, list[Conversation]] = defaultdict(list)
    for (day, uid), keys in sorted(per_upload.items()):
        with tempfile.TemporaryDirectory(prefix="chatetl-holders-") as tmp:
            c_path = store.download(table_key("conversations", day, uid), Path(tmp, "c.parquet"))
            m_path = store.download(table_key("messages", day, uid), Path(tmp, "m.parquet"))
            for conv, _ in iter_conversations(c_path, m_path):
                if conv.key in keys:
                    states[conv.key].append(conv)
    return states


def holder_days(found: dict[str, list[tuple[str, str]]]) -> set[str]:
    return {day for places in found.values() for day, _ in places}
