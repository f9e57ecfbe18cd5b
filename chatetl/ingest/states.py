"""The conversations of an upload's new tables, settled on local files before they are put.

One state per conversation leaves the ingest stage: where the upload's earlier version held a
newer state of a conversation, that state is kept (an older upload put over a newer one never
rolls an output back), and where the upload holds one conversation twice (the same id twice in a
file, or in two files of a zip), the winner of model.state_order stays. Both passes run on the
tables still on local disk, in that order, so the stage puts each table once and never reads back
what it has just put. `summary_rows` is what the day's summary reads of a conversations file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pyarrow.parquet as pq

from chatetl.layout import TABLES, table_key
from chatetl.model import StateOrder, state_order
from chatetl.storage import ObjectStore
from chatetl.tables import TableWriter, iter_conversations, read_rows

# what the day's summary reads of each conversation: its key and source, what tells an updated state from an
# unchanged one (update time, message counts, title), and the preview's columns
SUMMARY_COLUMNS = ["conversation_key", "source", "platform", "title", "updated_at", "message_count", "total_messages"]


def summary_rows(conversations_file: str | Path) -> list[dict[str, Any]]:
    """The SUMMARY_COLUMNS of every row of a conversations file (those it has)."""
    pf = pq.ParquetFile(conversations_file)
    rows = pf.read(columns=[c for c in SUMMARY_COLUMNS if c in pf.schema_arrow.names]).to_pylist()
    return cast("list[dict[str, Any]]", rows)  # (pyarrow has no types: Table.to_pylist gives one dict per row)


def keep_previous_newer(store: ObjectStore, day: str, uid: str, paths: dict[str, Path],
                        previous: Mapping[str, Mapping[str, Any]], tmp: Path) -> list[str]:
    """An older version of an upload put over a newer one at the same key: for each conversation the new tables
    (`paths`) hold in an older state (model.state_order) than the earlier version's tables in the bucket
    (`previous`: their summary rows), the earlier state replaces it in the new tables, so no output rolls back to
    it, as with an older upload under another key. Reads two columns unless some update time went back (then the
    earlier version's tables, never the new ones); the keys kept, sorted."""
    older = {
        row["conversation_key"]
        for row in read_rows(paths["conversations"], ["conversation_key", "updated_at"])
        if _went_back(row.get("updated_at"), (previous.get(row["conversation_key"]) or {}).get("updated_at"))
    }
    if not older:
        return []
    before = {t: store.download(table_key(t, day, uid), tmp / f"previous-{t}.parquet") for t in TABLES}
    earlier = {conv.key: (conv, up) for conv, up in iter_conversations(before["conversations"], before["messages"]) if conv.key in older}
    kept: set[str] = set()
    out = {t: tmp / f"kept-{t}.parquet" for t in TABLES}
    with TableWriter(out["conversations"], out["messages"]) as writer:
        for conv, up in iter_conversations(paths["conversations"], paths["messages"]):
            old = earlier.get(conv.key)
            if old is not None and state_order(old[0]) > state_order(conv):
                conv, up = old
                kept.add(conv.key)
            writer.add(conv, upload_key=up)
    if kept:
        for t in TABLES:
            out[t].replace(paths[t])
    return sorted(kept)


def _went_back(new: Any, old: Any) -> bool:
    return old is not None and (new is None or new < old)


def keep_newest_states(paths: dict[str, Path], tmp: Path) -> dict[str, int]:
    """One state per conversation in the new tables (`paths`): where they hold two states of one conversation, the
    winner of model.state_order stays and the tables are rewritten without the others. Reads only the key column
    unless there are duplicates; {key: how many states it had} of those, sorted by key."""
    counts = Counter(r["conversation_key"] for r in read_rows(paths["conversations"], ["conversation_key"]))
    twice = {k for k, n in counts.items() if n > 1}
    if not twice:
        return {}
    best: dict[str, tuple[StateOrder, int]] = {}
    for i, (conv, _) in enumerate(iter_conversations(paths["conversations"], paths["messages"])):
        if conv.key in twice:
            order = state_order(conv)
            if conv.key not in best or order > best[conv.key][0]:
                best[conv.key] = (order, i)
    keep = {i for _, i in best.values()}
    out = {t: tmp / f"one-state-{t}.parquet" for t in TABLES}
    with TableWriter(out["conversations"], out["messages"]) as writer:
        for i, (conv, upload_key) in enumerate(iter_conversations(paths["conversations"], paths["messages"])):
            if conv.key not in twice or i in keep:
                writer.add(conv, upload_key=upload_key)
    for t in TABLES:
        out[t].replace(paths[t])
    return {key: counts[key] for key in sorted(twice)}
