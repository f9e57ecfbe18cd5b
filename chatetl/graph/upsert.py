"""One batch of conversation states in one transaction: decided, then created or written over the stored state.

Each function here runs inside a managed transaction it is given and is a pure function of its
input, so the driver may retry it and a batch commits whole or not at all. A state with no node is
CREATEd with its messages and links (no lookups); a state that wins over a stored one is decided
again under the node's lock, its old messages deleted and its own created the same way; the
`safe` way (a node another load created meanwhile) MERGEs instead. Deep mode's traces follow the
state that was written.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from chatetl.graph.connection import quiet, run_counted
from chatetl.graph.decide import WRITTEN, StoredState, brings_new_source, decide
from chatetl.graph.properties import (
    MESSAGE_PROPERTIES,
    conversation_graph_row,
    conversation_props,
    message_columns,
    message_key,
    message_links,
    next_ids,
)
from chatetl.graph.staging import begin_swap, complete_stage, swap_step
from chatetl.graph.statements import (
    CHECK_CONVERSATIONS,
    CREATE_CONVERSATIONS,
    CREATE_MESSAGES,
    DROP_MESSAGES,
    LINK_MESSAGES,
    LINK_TRACE_STEPS,
    LINK_TRACE_STEPS_TO_STAGED,
    REMOVE_STALE_LINKS,
    REMOVE_STALE_MESSAGES,
    REMOVE_STEPS,
    REMOVE_TRACES,
    STATE_FIELDS,
    UPSERT_CONVERSATIONS,
    UPSERT_MESSAGES,
    WRITE_TRACES,
)
from chatetl.graph.summary import LoadSummary
from chatetl.graph.traces import trace_for
from chatetl.model import SOURCE_FIDELITY, Conversation

if TYPE_CHECKING:
    from neo4j import ManagedTransaction, Record

STATEMENT_MESSAGES = 5000  # messages per statement, whatever a batch holds (the statements' size stays bounded)

Row = dict[str, Any]  # a conversation's graph row (chatetl.graph.properties.conversation_graph_row)
Stored = dict[str, StoredState]  # conversation key -> its node's state, for the keys that have a node


class DeletedMeanwhile(Exception):
    """A Conversation the upsert's MERGE matched was deleted (retracted) by another transaction while the upsert waited
    for its lock: it reads as nulls, and what is linked to it fails. The transaction is rolled back and written again
    (the MERGE then creates the Conversation anew). `args[0]`: the keys."""


class SwapInProgress(Exception):
    """Conversations being swapped in, in steps (chatetl.graph.staging): their swaps are finished before they are
    written (the transaction that found them is rolled back). `args[0]`: the stages' keys."""


class NotStaged(Exception):
    """The state wins under the lock but its messages are not all staged: the swap is rolled back, they are staged."""


def run(tx: ManagedTransaction, summary: LoadSummary, query: str, **params: Any) -> list[Record]:
    """Run one statement; its records, its updates counted in `summary.graph_updates`."""
    records, updates = run_counted(tx, query, params)
    summary.graph_updates += updates
    return records


def read_state(tx: ManagedTransaction, keys: list[str]) -> Stored:
    """The stored state of the conversations of `keys` that have a node (read-only, no locks)."""
    [record] = tx.run(CHECK_CONVERSATIONS, quiet({"keys": keys}))
    return {state[0]: cast(StoredState, dict(zip(STATE_FIELDS, state))) for state in record["states"]}


def write_batch(tx: ManagedTransaction, convs: list[Conversation], deep: bool, safe: bool = False,
                rows: list[Row] | None = None, stored: Stored | None = None) -> LoadSummary:
    """One batch in one transaction.

    The stored states decide first which states are new, which win and which change nothing (`plan`); new
    conversations are CREATEd, with their messages and links; `safe` writes them like a replaced state's (MERGE),
    for a conversation another load created meanwhile or the rare graph where nodes outlived their conversation.
    `rows` are the conversations' graph rows, when computed already; `stored` the check's answer, when read
    already (in its own read transaction: no locks either way, a state that must be written is decided again
    under the lock)."""
    summary = LoadSummary()
    if rows is None:
        rows = [conversation_graph_row(c, deep, props=False) for c in convs]
    if stored is None:
        stored = read_state(tx, [c.key for c in convs])
    outcomes = write_conversations(tx, summary, convs, rows, stored, safe)
    created, updated = _counted_outcomes(summary, convs, outcomes)
    accepted = created + updated
    if not accepted:
        return summary
    replaced = accepted if safe else updated
    write_messages(tx, summary, created, replaced, safe)
    summary.messages_written = sum(len(c.messages) for c in accepted)

    write_traces(tx, summary, accepted, replaced, deep, safe)
    return summary


def write_conversations(tx: ManagedTransaction, summary: LoadSummary, convs: list[Conversation], rows: list[Row],
                        stored: Stored, safe: bool) -> dict[str, str]:
    """The Conversation nodes of the states `plan` writes: created, or upserted (decided again under the lock).
    Every conversation's outcome (created, updated, unchanged, skipped); DeletedMeanwhile or SwapInProgress when
    the lock finds one deleted or being swapped in."""
    outcomes, to_create, to_upsert = plan(convs, rows, stored, safe)
    if to_create:
        run(tx, summary, CREATE_CONVERSATIONS, rows=sorted(to_create, key=lambda r: r["key"]))
    if to_upsert:
        to_upsert.sort(key=lambda r: r["key"])  # one lock order: fewer deadlocks
        records = run(tx, summary, UPSERT_CONVERSATIONS, rows=to_upsert, fidelity=SOURCE_FIDELITY)
        deleted = [rec["key"] for rec in records if rec["outcome"] == "deleted"]
        if deleted:
            raise DeletedMeanwhile(deleted)
        busy = [rec["swapping_in"] for rec in records if rec["outcome"] == "busy"]
        if busy:
            raise SwapInProgress(busy)
        for rec in records:
            outcomes[rec["key"]] = rec["outcome"]
    return outcomes


def _counted_outcomes(summary: LoadSummary, convs: list[Conversation],
                      outcomes: dict[str, str]) -> tuple[list[Conversation], list[Conversation]]:
    """The batch's outcomes counted in `summary`: the conversations created, and those updated (in batch order)."""
    created: list[Conversation] = []
    updated: list[Conversation] = []
    for conv in convs:
        outcome = outcomes.get(conv.key)
        if outcome == "created":
            created.append(conv)
        elif outcome == "updated":
            updated.append(conv)
        elif outcome == "unchanged":
            summary.conversations_unchanged += 1
        else:
            summary.conversations_skipped += 1
    summary.conversations_created, summary.conversations_updated = len(created), len(updated)
    return created, updated


def write_messages(tx: ManagedTransaction, summary: LoadSummary, created: list[Conversation], replaced: list[Conversation],
                   safe: bool) -> None:
    """The written states' messages and links: a replaced state's old messages deleted and the new ones created
    with a created state's (no lookups, no per-link MERGE); `safe`: every state's upserted (`replace_messages`)."""
    if safe:
        replace_messages(tx, summary, replaced)
        return
    if replaced:
        stale = [{"key": c.key, "message_keys": [message_key(c, m.message_id) for m in c.messages]} for c in replaced]
        [record] = run(tx, summary, DROP_MESSAGES, convs=stale)
        summary.messages_removed += record["removed"]
    fresh = created + replaced
    if fresh:
        create_messages(tx, summary, fresh)


def plan(convs: list[Conversation], rows: list[Row], stored: Stored,
         safe: bool) -> tuple[dict[str, str], list[Row], list[Row]]:
    """From the stored states: the outcomes known without writing, the rows to CREATE and the rows to upsert under
    the lock. The conversation properties are made only for rows that are written (an unchanged rerun needs none)."""
    outcomes: dict[str, str] = {}
    to_create: list[Row] = []
    to_upsert: list[Row] = []
    for conv, row in zip(convs, rows):
        key = row["key"]
        old = stored.get(key)
        if old is None and not safe:
            row["sources"] = [row["arrived_via"]]
            row["source_files"] = [row["source_file"]] if row["source_file"] is not None else []
            to_create.append(row)
            outcomes[key] = "created"
        else:
            outcome = decide(row, old)
            if outcome in WRITTEN or old is None or brings_new_source(row, old):
                to_upsert.append(row)
            else:
                outcomes[key] = outcome
                continue
        if "props" not in row:
            row["props"] = conversation_props(conv)
    return outcomes, to_create, to_upsert


def create_messages(tx: ManagedTransaction, summary: LoadSummary, group: list[Conversation]) -> None:
    """The messages of created conversations and their links, in statements of about STATEMENT_MESSAGES messages."""
    columns: list[list[Any]] = [[] for _ in MESSAGE_PROPERTIES]
    keys: list[str] = []
    lo: list[int] = [0]
    links: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])

    def flush() -> None:
        if keys:
            params = {f"p_{name}": col for name, col in zip(MESSAGE_PROPERTIES, columns)}
            run(tx, summary, CREATE_MESSAGES, conversations=keys, lo=lo, next_from=links[0], next_to=links[1],
                reply_from=links[2], reply_to=links[3], **params)

    for conv in group:
        base = lo[-1]
        index: dict[str, int] = {}
        for col, values in zip(columns, message_columns(conv, conv.messages)):
            col.extend(values)
        for n, m in enumerate(conv.messages):
            index[m.message_id] = base + n
        nexts = next_ids(conv)
        for m in conv.messages:
            me = index[m.message_id]
            next_id = nexts.get(m.message_id)
            nxt = index.get(next_id) if next_id is not None else None
            if nxt is not None:
                links[0].append(me)
                links[1].append(nxt)
            parent = index.get(m.parent_id) if m.parent_id else None
            if parent is not None:
                links[2].append(me)
                links[3].append(parent)
        keys.append(conv.key)
        lo.append(base + len(conv.messages))
        if lo[-1] >= STATEMENT_MESSAGES:
            flush()
            columns = [[] for _ in MESSAGE_PROPERTIES]
            keys, lo, links = [], [0], ([], [], [], [])
    flush()


def replace_messages(tx: ManagedTransaction, summary: LoadSummary, group: list[Conversation]) -> None:
    """A replaced state's messages, the safe way: upserted, the ones it no longer has deleted, links made to match."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for conv in group:
        chunk.append({"key": conv.key, "messages": _set_props(conv)})
        size += len(conv.messages)
        if size >= STATEMENT_MESSAGES:
            run(tx, summary, UPSERT_MESSAGES, convs=chunk)
            chunk, size = [], 0
    if chunk:
        run(tx, summary, UPSERT_MESSAGES, convs=chunk)
    stale = [{"key": c.key, "message_keys": [message_key(c, m.message_id) for m in c.messages]} for c in group]
    [record] = run(tx, summary, REMOVE_STALE_MESSAGES, convs=stale)
    summary.messages_removed += record["removed"]
    links = []
    for conv in group:
        for mid, (nxt, parent) in message_links(conv).items():
            links.append({"key": message_key(conv, mid), "next": message_key(conv, nxt) if nxt else "",
                          "parent": message_key(conv, parent) if parent else ""})
    run(tx, summary, REMOVE_STALE_LINKS, links=links)
    run(tx, summary, LINK_MESSAGES, links=links)


def _set_props(conv: Conversation) -> list[dict[str, Any]]:
    """Each message's properties without the empty ones (`SET m = props` leaves them unset): less to send."""
    return [{k: v for k, v in zip(MESSAGE_PROPERTIES, values) if v is not None}
            for values in zip(*message_columns(conv, conv.messages))]


def write_traces(tx: ManagedTransaction, summary: LoadSummary, accepted: Iterable[Conversation],
                 replaced: list[Conversation], deep: bool, safe: bool, token: str | None = None) -> None:
    """The DecisionTraces of the accepted states (deep mode), written over their old ones; replaced states without
    tool use (or loaded without deep mode) lose theirs. `safe`: steps of the same keys elsewhere removed first.
    `token`: the messages are still staged under this token (a swap's first transaction): linked there."""
    traces = [t for t in (trace_for(c) for c in accepted) if t is not None] if deep else []
    traced = {t["conversation_key"] for t in traces}
    untraced = [c.key for c in replaced if c.key not in traced]
    if untraced:
        [record] = run(tx, summary, REMOVE_TRACES, keys=untraced)
        summary.traces_removed += record["removed"]
    if traces:
        if safe:
            run(tx, summary, REMOVE_STEPS, keys=[s["key"] for t in traces for s in t["steps"]])
        run(tx, summary, WRITE_TRACES, traces=traces)
        if token is None:
            run(tx, summary, LINK_TRACE_STEPS, ids=[t["id"] for t in traces])
        else:
            run(tx, summary, LINK_TRACE_STEPS_TO_STAGED, ids=[t["id"] for t in traces], token=token)
        summary.traces_written += len(traces)
        summary.trace_steps_written += sum(len(t["steps"]) for t in traces)


def swap(tx: ManagedTransaction, conv: Conversation, row: Row, key: str, deep: bool, staged: bool,
         limit: int) -> tuple[bool, LoadSummary]:
    """A staged state's swap begins (chatetl.graph.staging), in one transaction: decided under the Conversation's
    lock; if it wins, the Conversation's properties and trace are written and the first `limit` messages swapped
    (all of them, for a state of fewer: then readers see the old state until this commits, and the new one after).
    `staged`: whether its messages were staged (a state expected to lose is not: if it wins after all, NotStaged
    rolls the swap back). Returns (whether the swap is over, what was written)."""
    summary = LoadSummary()
    runner = functools.partial(run, tx, summary)
    [rec] = runner(UPSERT_CONVERSATIONS, rows=[row], fidelity=SOURCE_FIDELITY)
    outcome, over = rec["outcome"], True
    if outcome == "deleted":
        raise DeletedMeanwhile([conv.key])
    if outcome == "busy":
        raise SwapInProgress([rec["swapping_in"]])
    if outcome in WRITTEN:
        token = complete_stage(runner, key) if staged else None
        if token is None:
            raise NotStaged(key)
        begin_swap(runner, conv.key, key)
        write_traces(tx, summary, [conv], [conv] if outcome == "updated" else [], deep, safe=True, token=token)
        over, summary.messages_removed = swap_step(runner, key, limit)
        summary.messages_written = len(conv.messages)
        summary.conversations_created, summary.conversations_updated = int(outcome == "created"), int(outcome == "updated")
    elif outcome == "unchanged":
        summary.conversations_unchanged = 1
    else:
        summary.conversations_skipped = 1
    return over, summary
