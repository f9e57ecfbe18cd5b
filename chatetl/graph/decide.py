"""Which state of a conversation the graph keeps: chatetl.model's order, and the graph's own rules beside it.

A Conversation node holds one state (its version, source, hash and file, whether it was written in
deep mode) and every format and file it arrived through. `decide` says what a state met again does
to it; the upsert statement's CASE (chatetl.graph.statements.UPSERT_CONVERSATIONS) decides the same
under the node's lock, and tests/graph/test_decide.py holds the two to one table of cases.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from chatetl.model import order_of

Outcome = Literal["created", "updated", "unchanged", "skipped"]
WRITTEN: tuple[Outcome, ...] = ("created", "updated")  # the outcomes that write the state


class StoredState(TypedDict):
    """A node's state as the load's check reads it (chatetl.graph.statements.CHECK_CONVERSATIONS)."""

    key: str
    version: float
    hash: str
    state_source: str
    state_file: str | None
    deep: bool
    sources: list[str]
    source_files: list[str]
    swapping_in: str | None  # a state being swapped in, in steps (chatetl.graph.staging): its stage's key


def decide(new: Mapping[str, Any], stored: StoredState | None) -> Outcome:
    """What the state `new` (a graph row: chatetl.graph.properties.conversation_graph_row) does to the node's.

    `created`: no node. `unchanged`: the same state written in the same mode (nothing written). `updated`: it wins
    by model.order_of (update time, format, hash), or it is the same state written in the other mode, or it was
    re-read from the file the stored state came from (same time, same format, other content: a reader changed,
    and the file's newest reading is the truth). `skipped`: it loses (the graph never regresses)."""
    if stored is None:
        return "created"
    if new["state_version"] == stored["version"]:
        if new["state_hash"] == stored["hash"]:
            return "unchanged" if new["deep"] == stored["deep"] else "updated"
        if new["source_file"] is not None and new["source_file"] == stored["state_file"] \
                and new["arrived_via"] == stored["state_source"]:
            return "updated"
    mine = order_of(new["state_version"], new["arrived_via"], new["state_hash"])
    theirs = order_of(stored["version"], stored["state_source"], stored["hash"])
    return "updated" if mine > theirs else "skipped"


def brings_new_source(new: Mapping[str, Any], stored: StoredState) -> bool:
    """Whether the state arrived through a format or file the node does not record yet (recorded whatever wins)."""
    return new["arrived_via"] not in stored["sources"] or (
        new["source_file"] is not None and new["source_file"] not in stored["source_files"])


def quiet_outcome(new: Mapping[str, Any], stored: StoredState | None) -> Outcome | None:
    """The outcome of a state that writes nothing at all (`unchanged` or `skipped`, and no new format or file);
    None when it must be written."""
    if stored is None or brings_new_source(new, stored):
        return None
    outcome = decide(new, stored)
    return None if outcome in WRITTEN else outcome
