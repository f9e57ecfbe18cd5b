"""Load conversations into Neo4j: batched UNWIND writes, newest state wins, reruns change nothing.

Conversations are grouped into batches of about `batch_messages` messages (a conversation is
never split; two states of one conversation never share a batch) and each batch is written in
one managed transaction (retried on transient errors such as deadlocks), by a handful of
UNWIND statements: no per-row round trips. A batch commits whole or not at all, so a load
that is interrupted (process killed, server restarted) and run again ends in the same graph.
A conversation of more than `stage_messages` messages is a batch of its own and is written in
steps instead, staged then swapped in (chatetl.graph.staging: bounded transactions, the same
rules, the same guarantee: a rerun goes on from the last committed step). Every write
transaction reports the memory the server held for it (`largest_transaction_bytes`).

One conversation fails alone: a batch that fails for a conversation's sake (a value the server
or the driver refuses, e.g. an id longer than an index key may be; or a transaction too big for
the server's memory, which Neo4j reports as transient: it is not retried, it would fail again)
is split in halves and written again, each half whole or not at all, until that conversation
fails alone; it is counted (`conversations_failed`) and described (`failures`: key, file,
the server's words), the rest of the load is written, and the next run tries it again (alone:
the others are unchanged). What is not about one conversation (the connection, the server's
state, a refused login, a statement of chatetl's own) fails the load as before.

Per conversation (key `{platform}:{conversation_id}`: the same chat arriving as a ChatGPT
account export, a chat-export file and a REX record is one node):
- a read-only check first reads the stored state of every conversation of the batch (key,
  version, hash, sources), in its own read transaction while the state hashes are computed
  (once per load); a batch of which nothing is written opens no write transaction; a conversation with no
  node is CREATEd, one whose state does not win and that brings no new format or file is not
  written at all (an unchanged rerun reports 0 updates in the server's counters, kept in
  `graph_updates`); the others are write-locked and decided again under the lock, so two loads
  writing the same conversation at once serialize instead of losing an update (two creating it
  at once: the second fails on the key constraint and writes its batch again the MERGE way; one
  deleted by a retraction while the lock was waited for reads as nulls: the batch is written again,
  the conversation created anew);
- every format it arrived through and every file are recorded (`sources`, `source_files`,
  sorted), whatever the outcome;
- the state wins by the source's own update time (`state_version`): `created` (new),
  `updated` (newer; or the same time re-read from the same file with other content, e.g. a
  reader fix; or the same time from a richer format, see chatetl.model.SOURCE_FIDELITY; then
  the larger state hash, so the outcome never depends on load order), `unchanged` (same
  state, same mode: nothing is written), `skipped` (older: never regresses the graph);
- a created conversation's messages, HAS_MESSAGE, NEXT (visible turns of the active branch)
  and REPLIES_TO (every message to its parent) are CREATEd in one statement per ~5,000
  messages, without lookups: properties sent as one list per property, links as pairs of
  list indexes;
- a winning state replaces the old one: its old messages are deleted with their links and the
  state's are CREATEd like a new conversation's (nothing but HAS_MESSAGE, NEXT, REPLIES_TO and
  its own TraceSteps' FROM_MESSAGE links to a Message), its DecisionTrace replaced (deep mode)
  or removed. The `safe` way (a conversation another load created meanwhile) MERGEs instead:
  messages upserted, the ones it no longer has deleted, NEXT / REPLIES_TO made to match the
  links the state asks for (passed with the statement, not stored on the node);
- with `parallel`, batches made only of new conversations are written two at a time, on two
  sessions (the second in a thread); `on_batch` still sees them in order.

Per batch: the check; one statement for created conversations and one per ~5,000 of their
messages; for replaced states the locked upsert, one deleting their old messages and the
created messages' statements; two or three for traces. Unchanged and older states cost only
the check. A conversation being swapped in, in steps, by another (or a stopped) load
(`swapping_in` on its node) has that swap finished first.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from chatetl.graph.connection import (
    TransactionTooBig,
    quiet,
    run_counted,
    value_fault,
    write_measured,
    write_session,
)
from chatetl.graph.properties import (
    MESSAGE_PROPERTIES,
    conversation_graph_row,
    conversation_props,
    message_columns,
    message_key,
    message_links,
    next_ids,
)
from chatetl.graph.schema import ensure_schema
from chatetl.graph.staging import (
    StageDiscarded,
    StagePlan,
    begin_swap,
    complete_stage,
    delete_garbage,
    drop_stages,
    has_garbage,
    pending_stages,
    stage_key,
    stage_plan,
    stage_step,
    swap_step,
)
from chatetl.graph.traces import trace_for
from chatetl.model import SOURCE_FIDELITY, Conversation, state_batches
from chatetl.storage import ObjectStore
from chatetl.tables import iter_conversations, iter_partition_files, table_states
from chatetl.tally import Tally, capped, summed_by

log = logging.getLogger(__name__)

DEFAULT_BATCH_MESSAGES = 5000
DEFAULT_STAGE_MESSAGES = 5000  # a conversation of more messages is written in steps of this many (chatetl.graph.staging)
DEFAULT_SWAP_MESSAGES = 20000  # ... and swapped in this many per transaction (labels and links only: ~3.5 KB a message)
# A batch that replaces stored states writes the conversations it changes in transactions of about this many messages:
# the old messages' deletion grows the transaction's cost faster than its size (the 10% resync from the tables of
# bench/graph_load.py, 200 conversations replaced: 1.77-2.43 s in transactions of 5,000 messages, 1.11-1.24 s of 1,000)
REPLACE_MESSAGES = 1000
FAILURES_LISTED = 100  # LoadSummary.failures keeps the first 100 (conversations_failed counts them all)
STAGE_ATTEMPTS = 3  # a stage discarded by a concurrent load (found at the swap, or by a step) is staged again this many times at most


@dataclass
class LoadSummary(Tally):
    conversations_created: int = 0
    conversations_updated: int = 0
    conversations_unchanged: int = 0
    conversations_skipped: int = 0  # an older state (or a poorer one of the same time): recorded as a source only
    conversations_failed: int = 0  # refused by the server (or the driver) even written alone: see `failures`
    conversations_staged: int = 0  # written in steps (more messages than `stage_messages`, chatetl.graph.staging)
    messages_written: int = 0
    messages_removed: int = 0
    traces_written: int = 0
    trace_steps_written: int = 0
    traces_removed: int = 0
    graph_updates: int = 0  # what the server reported: nodes, relationships, labels and properties written or deleted
    # the heap the server held for the largest write transaction, just before it committed (chatetl.graph.connection)
    largest_transaction_bytes: int = summed_by(max, default=0)
    failures: list[str] = summed_by(capped(FAILURES_LISTED), default_factory=list)  # noqa: RUF009 - "key (file): why", the first ones

    def to_dict(self) -> dict[str, int]:
        """The counts (`failures` apart: a list)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "failures"}


class _DeletedMeanwhile(Exception):
    """A Conversation the upsert's MERGE matched was deleted (retracted) by another transaction while the upsert waited
    for its lock: it reads as nulls, and what is linked to it fails. The transaction is rolled back and written again
    (the MERGE then creates the Conversation anew). `args[0]`: the keys."""


class _SwapInProgress(Exception):
    """Conversations being swapped in, in steps (chatetl.graph.staging): their swaps are finished before they are
    written (the transaction that found them is rolled back). `args[0]`: the stages' keys."""


# read-only: what decides whether a state wins (no lock: a state that must be written is decided again under the lock),
# in _STATE_FIELDS order, all in one record: a record each cost ~55 us more per key (100 keys: 8.5 ms a read against
# 5.1 ms collected, 500 keys: 19 against 12 ms; the local Neo4j, execute_read)
_CHECK_CONVERSATIONS = """
UNWIND $keys AS key
MATCH (c:Conversation {key: key})
RETURN collect([key, c.state_version, c.state_hash, c.state_source, c.state_file, coalesce(c.deep, false),
                coalesce(c.sources, []), coalesce(c.source_files, []), c.swapping_in]) AS states
"""
_STATE_FIELDS = ("key", "version", "hash", "state_source", "state_file", "deep", "sources", "source_files", "swapping_in")

# conversations that had no node: CREATEd (a concurrent load creating the same one fails on the key constraint,
# and the batch is written again the safe way)
_CREATE_CONVERSATIONS = """
UNWIND $rows AS row
CREATE (c:Conversation)
SET c = row.props, c.sources = row.sources, c.source_files = row.source_files, c.state_version = row.state_version,
    c.state_hash = row.state_hash, c.state_source = row.arrived_via, c.state_file = row.source_file, c.deep = row.deep
WITH c, row
OPTIONAL MATCH (d:Document {key: row.key})
FOREACH (_ IN CASE WHEN d IS NULL THEN [] ELSE [1] END | CREATE (c)-[:HAS_DOCUMENT]->(d))
"""

# a node that exists: locked, its state read again and decided under the lock ('busy': a state is being swapped in
# in steps, chatetl.graph.staging; the transaction is rolled back and that swap finished first)
_UPSERT_CONVERSATIONS = """
UNWIND $rows AS row
MERGE (c:Conversation {key: row.key})
SET c._lock = true
WITH c, row, c.state_version AS old_version, c.state_hash AS old_hash,
     coalesce($fidelity[c.state_source], 0) AS old_rank
WITH c, row,
     CASE
       WHEN c.key IS NULL THEN 'deleted'
       WHEN c.swapping_in IS NOT NULL THEN 'busy'
       WHEN old_version IS NULL THEN 'created'
       WHEN row.state_version < old_version THEN 'skipped'
       WHEN row.state_version > old_version THEN 'updated'
       WHEN row.state_hash = old_hash THEN
         CASE WHEN coalesce(c.deep, false) = row.deep THEN 'unchanged' ELSE 'updated' END
       WHEN row.source_file IS NOT NULL AND row.source_file = c.state_file AND row.arrived_via = c.state_source THEN 'updated'
       WHEN row.state_rank > old_rank THEN 'updated'
       WHEN row.state_rank < old_rank THEN 'skipped'
       WHEN row.state_hash > old_hash THEN 'updated'
       ELSE 'skipped'
     END AS outcome
CALL (c, row) {
  UNWIND coalesce(c.sources, []) + [row.arrived_via] AS s
  WITH DISTINCT s ORDER BY s
  RETURN collect(s) AS sources
}
CALL (c, row) {
  UNWIND coalesce(c.source_files, []) + coalesce([row.source_file], []) AS f
  WITH DISTINCT f ORDER BY f
  RETURN collect(f) AS source_files
}
SET c.sources = sources, c.source_files = source_files
FOREACH (_ IN CASE WHEN outcome IN ['created', 'updated'] THEN [1] ELSE [] END |
  SET c += row.props, c.state_version = row.state_version, c.state_hash = row.state_hash,
      c.state_source = row.arrived_via, c.state_file = row.source_file, c.deep = row.deep
)
REMOVE c._lock
WITH c, row, outcome
OPTIONAL MATCH (d:Document {key: row.key})
FOREACH (_ IN CASE WHEN d IS NOT NULL AND outcome = 'created' THEN [1] ELSE [] END | MERGE (c)-[:HAS_DOCUMENT]->(d))
RETURN row.key AS key, outcome, c.swapping_in AS swapping_in
"""

# a created conversation's messages are new (its node did not exist, and messages are only ever written with their
# conversation, in its transaction): CREATEd with their HAS_MESSAGE, NEXT and REPLIES_TO in one statement, no
# lookups but the conversation's. Parameters are columns (one list per property, `$lo[ci]..$lo[ci+1]-1` the messages
# of conversation ci); links are pairs of list indexes.
_CREATE_MESSAGES = """
UNWIND range(0, size($conversations) - 1) AS ci
MATCH (c:Conversation {key: $conversations[ci]})
UNWIND range($lo[ci], $lo[ci + 1] - 1) AS i
CREATE (c)-[:HAS_MESSAGE]->(m:Message {""" + ", ".join(f"{name}: $p_{name}[i]" for name in MESSAGE_PROPERTIES) + """})
WITH collect(m) AS ms
CALL (ms) {
  UNWIND range(0, size($next_from) - 1) AS j
  WITH ms[$next_from[j]] AS a, ms[$next_to[j]] AS b
  CREATE (a)-[:NEXT]->(b)
}
CALL (ms) {
  UNWIND range(0, size($reply_from) - 1) AS j
  WITH ms[$reply_from[j]] AS a, ms[$reply_to[j]] AS b
  CREATE (a)-[:REPLIES_TO]->(b)
}
"""

# a replaced state's old messages, deleted with their links before its messages are CREATEd like a new
# conversation's (nothing else links to a Message but its TraceSteps, which the batch writes again or removes);
# `removed` counts the ones the new state no longer has
_DROP_MESSAGES = """
UNWIND $convs AS conv
MATCH (:Conversation {key: conv.key})-[:HAS_MESSAGE]->(m:Message)
WITH m, NOT m.key IN conv.message_keys AS stale
DETACH DELETE m
RETURN count(CASE WHEN stale THEN 1 END) AS removed
"""

_UPSERT_MESSAGES = """
UNWIND $convs AS conv
MATCH (c:Conversation {key: conv.key})
UNWIND conv.messages AS props
MERGE (m:Message {key: props.key})
SET m = props
MERGE (c)-[:HAS_MESSAGE]->(m)
"""

_REMOVE_STALE_MESSAGES = """
UNWIND $convs AS conv
MATCH (:Conversation {key: conv.key})-[:HAS_MESSAGE]->(m:Message)
WHERE NOT m.key IN conv.message_keys
DETACH DELETE m
RETURN count(m) AS removed
"""

# a replaced state's messages: links it no longer asks for deleted, the ones it asks for merged (`next` / `parent`:
# the keys a message should link to, '' for none)
_REMOVE_STALE_LINKS = """
UNWIND $links AS link
MATCH (m:Message {key: link.key})-[r:NEXT|REPLIES_TO]->(o:Message)
WHERE (type(r) = 'NEXT' AND o.key <> link.next) OR (type(r) = 'REPLIES_TO' AND o.key <> link.parent)
DELETE r
"""

_LINK_MESSAGES = """
UNWIND $links AS link
MATCH (m:Message {key: link.key})
CALL (m, link) {
  MATCH (n:Message {key: link.next})
  MERGE (m)-[:NEXT]->(n)
}
CALL (m, link) {
  MATCH (p:Message {key: link.parent})
  MERGE (m)-[:REPLIES_TO]->(p)
}
"""

_REMOVE_TRACES = """
UNWIND $keys AS key
MATCH (:Conversation {key: key})-[:HAS_TRACE]->(t:DecisionTrace)
CALL (t) {
  MATCH (t)-[:HAS_STEP]->(s:TraceStep)
  DETACH DELETE s
}
DETACH DELETE t
RETURN count(*) AS removed
"""

_WRITE_TRACES = """
UNWIND $traces AS trace
MATCH (c:Conversation {key: trace.conversation_key})
MERGE (t:DecisionTrace {id: trace.id})
SET t = trace.props
MERGE (c)-[:HAS_TRACE]->(t)
WITH t, trace
CALL (t) {
  MATCH (t)-[:HAS_STEP]->(old:TraceStep)
  DETACH DELETE old
}
CALL (t, trace) {
  UNWIND trace.steps AS step
  CREATE (s:TraceStep)
  SET s = step
  CREATE (t)-[:HAS_STEP]->(s)
}
"""

_REMOVE_STEPS = """
UNWIND $keys AS key
MATCH (s:TraceStep {key: key})
DETACH DELETE s
"""

_LINK_TRACE_STEPS = """
UNWIND $ids AS id
MATCH (:DecisionTrace {id: id})-[:HAS_STEP]->(s:TraceStep)
CALL (s) {
  MATCH (n:TraceStep {key: s.trace_id + ':' + toString(s.index + 1)})
  CREATE (s)-[:NEXT]->(n)
}
CALL (s) {
  MATCH (call:TraceStep {key: s.paired_step})
  CREATE (s)-[:RESULT_OF]->(call)
}
CALL (s) {
  MATCH (m:Message {key: s.message_key})
  CREATE (s)-[:FROM_MESSAGE]->(m)
}
"""

# in a swap (chatetl.graph.staging) the trace is written before the staged messages become Messages
_LINK_TRACE_STEPS_TO_STAGED = _LINK_TRACE_STEPS.replace(
    "MATCH (m:Message {key: s.message_key})",
    "MATCH (m:StagedMessage {key: s.message_key}) USING INDEX m:StagedMessage(key) WHERE m.stage = $token")


def _run(tx: Any, summary: LoadSummary, query: str, **params: Any) -> list[Any]:
    """Run one statement; its records, its updates counted in `summary.graph_updates`."""
    records, updates = run_counted(tx, query, params)
    summary.graph_updates += updates
    return records


def _decide(row: dict[str, Any], old: Any) -> str:
    """The outcome the upsert statement's CASE gives (read without the lock: the upsert decides again)."""
    if old is None:
        return "created"
    if row["state_version"] < old["version"]:
        return "skipped"
    if row["state_version"] > old["version"]:
        return "updated"
    if row["state_hash"] == old["hash"]:
        return "unchanged" if old["deep"] == row["deep"] else "updated"
    if row["source_file"] is not None and row["source_file"] == old["state_file"] and row["arrived_via"] == old["state_source"]:
        return "updated"
    old_rank = SOURCE_FIDELITY.get(old["state_source"], 0) if old["state_source"] is not None else 0
    if row["state_rank"] != old_rank:
        return "updated" if row["state_rank"] > old_rank else "skipped"
    return "updated" if row["state_hash"] > old["hash"] else "skipped"


def _new_sources(row: dict[str, Any], old: Any) -> bool:
    """Whether the state brings a format or file the node does not record yet."""
    return row["arrived_via"] not in old["sources"] or (row["source_file"] is not None and row["source_file"] not in old["source_files"])


def _create_messages(tx: Any, summary: LoadSummary, group: list[Conversation]) -> None:
    """The messages of created conversations and their links, in statements of about DEFAULT_BATCH_MESSAGES messages."""
    columns: list[list[Any]] = [[] for _ in MESSAGE_PROPERTIES]
    keys: list[str] = []
    lo: list[int] = [0]
    links: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])

    def flush() -> None:
        if keys:
            params = {f"p_{name}": col for name, col in zip(MESSAGE_PROPERTIES, columns)}
            _run(tx, summary, _CREATE_MESSAGES, conversations=keys, lo=lo, next_from=links[0], next_to=links[1],
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
            nxt = index.get(nexts.get(m.message_id))  # type: ignore[arg-type]
            if nxt is not None:
                links[0].append(me)
                links[1].append(nxt)
            parent = index.get(m.parent_id) if m.parent_id else None
            if parent is not None:
                links[2].append(me)
                links[3].append(parent)
        keys.append(conv.key)
        lo.append(base + len(conv.messages))
        if lo[-1] >= DEFAULT_BATCH_MESSAGES:  # statements of bounded size, whatever the batch holds
            flush()
            columns = [[] for _ in MESSAGE_PROPERTIES]
            keys, lo, links = [], [0], ([], [], [], [])
    flush()


def _replace_messages(tx: Any, summary: LoadSummary, group: list[Conversation]) -> None:
    """A replaced state's messages: upserted, the ones it no longer has deleted, links made to match it."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for conv in group:  # statements of bounded size, whatever the batch holds
        chunk.append({"key": conv.key, "messages": _set_props(conv)})
        size += len(conv.messages)
        if size >= DEFAULT_BATCH_MESSAGES:
            _run(tx, summary, _UPSERT_MESSAGES, convs=chunk)
            chunk, size = [], 0
    if chunk:
        _run(tx, summary, _UPSERT_MESSAGES, convs=chunk)
    stale = [{"key": c.key, "message_keys": [message_key(c, m.message_id) for m in c.messages]} for c in group]
    [record] = _run(tx, summary, _REMOVE_STALE_MESSAGES, convs=stale)
    summary.messages_removed += record["removed"]
    links = []
    for conv in group:
        for mid, (nxt, parent) in message_links(conv).items():
            links.append({"key": message_key(conv, mid), "next": message_key(conv, nxt) if nxt else "",
                          "parent": message_key(conv, parent) if parent else ""})
    _run(tx, summary, _REMOVE_STALE_LINKS, links=links)
    _run(tx, summary, _LINK_MESSAGES, links=links)


def _set_props(conv: Conversation) -> list[dict[str, Any]]:
    """Each message's properties without the empty ones (`SET m = props` leaves them unset): less to send."""
    return [{k: v for k, v in zip(MESSAGE_PROPERTIES, values) if v is not None}
            for values in zip(*message_columns(conv, conv.messages))]


def _read_state(tx: Any, keys: list[str]) -> dict[str, dict[str, Any]]:
    """The stored state of the conversations of `keys` that have a node (read-only, no locks)."""
    [record] = tx.run(_CHECK_CONVERSATIONS, quiet({"keys": keys}))
    return {state[0]: dict(zip(_STATE_FIELDS, state)) for state in record["states"]}


def _write_batch(tx: Any, convs: list[Conversation], deep: bool, safe: bool = False,
                 rows: list[dict[str, Any]] | None = None, stored: dict[str, dict[str, Any]] | None = None) -> LoadSummary:
    """One batch in one transaction (a pure function of its input: safe to retry).

    A read-only check decides first which states are new, which win and which change nothing;
    a batch where nothing wins and no format or file is new writes nothing. New conversations
    are CREATEd, with their messages and links (no lookups); `safe` writes them like a replaced
    state's (MERGE), for a conversation another load created meanwhile or the rare graph where
    nodes outlived their conversation. `rows` are the conversations' graph rows, when computed
    already; `stored` the check's answer, when read already (in its own read transaction: no
    locks either way, a state that must be written is decided again under the lock)."""
    summary = LoadSummary()
    if rows is None:
        rows = [conversation_graph_row(c, deep, props=False) for c in convs]
    if stored is None:
        stored = _read_state(tx, [c.key for c in convs])
    outcomes, to_create, to_upsert = _plan(convs, rows, stored, safe)
    if to_create:
        _run(tx, summary, _CREATE_CONVERSATIONS, rows=sorted(to_create, key=lambda r: r["key"]))
    if to_upsert:
        to_upsert.sort(key=lambda r: r["key"])  # one lock order: fewer deadlocks
        records = _run(tx, summary, _UPSERT_CONVERSATIONS, rows=to_upsert, fidelity=SOURCE_FIDELITY)
        deleted = [rec["key"] for rec in records if rec["outcome"] == "deleted"]
        if deleted:
            raise _DeletedMeanwhile(deleted)
        busy = [rec["swapping_in"] for rec in records if rec["outcome"] == "busy"]
        if busy:
            raise _SwapInProgress(busy)
        for rec in records:
            outcomes[rec["key"]] = rec["outcome"]
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
    accepted = created + updated
    if not accepted:
        return summary
    fresh, replaced = ([], accepted) if safe else (created, updated)
    if replaced and not safe:  # the old messages go, the state's are created: no lookups, no per-link MERGE
        stale = [{"key": c.key, "message_keys": [message_key(c, m.message_id) for m in c.messages]} for c in replaced]
        [record] = _run(tx, summary, _DROP_MESSAGES, convs=stale)
        summary.messages_removed += record["removed"]
        fresh = created + updated
    if fresh:
        _create_messages(tx, summary, fresh)
    if replaced and safe:
        _replace_messages(tx, summary, replaced)
    summary.messages_written = sum(len(c.messages) for c in accepted)

    _write_traces(tx, summary, accepted, replaced, deep, safe)
    return summary


def _write_traces(tx: Any, summary: LoadSummary, accepted: list[Conversation], replaced: list[Conversation], deep: bool,
                  safe: bool, token: str | None = None) -> None:
    """The DecisionTraces of the accepted states (deep mode), written over their old ones; replaced states without
    tool use (or loaded without deep mode) lose theirs. `safe`: steps of the same keys elsewhere removed first.
    `token`: the messages are still staged under this token (a swap's first transaction): linked there."""
    traces = [t for t in (trace_for(c) for c in accepted) if t is not None] if deep else []
    traced = {t["conversation_key"] for t in traces}
    untraced = [c.key for c in replaced if c.key not in traced]
    if untraced:
        [record] = _run(tx, summary, _REMOVE_TRACES, keys=untraced)
        summary.traces_removed += record["removed"]
    if traces:
        if safe:
            _run(tx, summary, _REMOVE_STEPS, keys=[s["key"] for t in traces for s in t["steps"]])
        _run(tx, summary, _WRITE_TRACES, traces=traces)
        if token is None:
            _run(tx, summary, _LINK_TRACE_STEPS, ids=[t["id"] for t in traces])
        else:
            _run(tx, summary, _LINK_TRACE_STEPS_TO_STAGED, ids=[t["id"] for t in traces], token=token)
        summary.traces_written += len(traces)
        summary.trace_steps_written += sum(len(t["steps"]) for t in traces)


def _plan(convs: list[Conversation], rows: list[dict[str, Any]], stored: dict[str, dict[str, Any]],
          safe: bool) -> tuple[dict[str, str], list[dict[str, Any]], list[dict[str, Any]]]:
    """From the stored states: the outcomes known without writing, the rows to CREATE and the rows to upsert under
    the lock. The conversation properties are made only for rows that are written (an unchanged rerun needs none)."""
    outcomes: dict[str, str] = {}
    to_create: list[dict[str, Any]] = []
    to_upsert: list[dict[str, Any]] = []
    for conv, row in zip(convs, rows):
        key = row["key"]
        old = stored.get(key)
        if old is None and not safe:
            row["sources"] = [row["arrived_via"]]
            row["source_files"] = [row["source_file"]] if row["source_file"] is not None else []
            to_create.append(row)
            outcomes[key] = "created"
        else:
            outcome = _decide(row, old)
            if outcome in ("created", "updated") or old is None or _new_sources(row, old):
                to_upsert.append(row)
            else:
                outcomes[key] = outcome
                continue
        if "props" not in row:
            row["props"] = conversation_props(conv)
    return outcomes, to_create, to_upsert


def _nothing_to_write(convs: list[Conversation], rows: list[dict[str, Any]], stored: dict[str, dict[str, Any]]) -> LoadSummary | None:
    """The batch's summary when the stored states say nothing of it is written (no write transaction at all)."""
    summary = LoadSummary()
    for row in rows:
        old = stored.get(row["key"])
        if old is None or _new_sources(row, old):
            return None
        outcome = _decide(row, old)
        if outcome == "unchanged":
            summary.conversations_unchanged += 1
        elif outcome == "skipped":
            summary.conversations_skipped += 1
        else:
            return None
    return summary


def _write_in_parts(writer: _Writer, session: Any, batch: list[Conversation], rows: list[dict[str, Any]],
                    stored: dict[str, dict[str, Any]]) -> LoadSummary:
    """A batch that meets stored states: its conversations that write nothing (unchanged or older states bringing no
    new source: `_nothing_to_write`) counted, the others written in order, REPLACE_MESSAGES messages a transaction at
    most (a conversation is never split)."""
    total = LoadSummary()
    part: list[int] = []
    size = 0

    def write() -> None:
        nonlocal part, size
        if part:
            convs = [batch[i] for i in part]
            total.add(writer.batch(session, convs, [rows[i] for i in part], {c.key: stored[c.key] for c in convs if c.key in stored}))
        part, size = [], 0

    for i, (conv, row) in enumerate(zip(batch, rows)):
        quiet = _nothing_to_write([conv], [row], stored)
        if quiet is not None:
            total.add(quiet)
            continue
        if part and size + len(conv.messages) > REPLACE_MESSAGES:
            write()
        part.append(i)
        size += len(conv.messages)
    write()
    return total


def batches(conversations: Iterable[Conversation], max_messages: int = DEFAULT_BATCH_MESSAGES,
            stage_messages: int | None = None) -> Iterator[list[Conversation]]:
    """Batches bounded by message count (see chatetl.model.state_batches); with `stage_messages`, a conversation of
    more messages is a batch of its own (it is staged: chatetl.graph.staging)."""
    for batch in state_batches(conversations, max_messages, weight=lambda conv: len(conv.messages) + 1):
        if stage_messages is None or all(len(c.messages) <= stage_messages for c in batch):
            yield batch
            continue
        part: list[Conversation] = []
        for conv in batch:
            if len(conv.messages) > stage_messages:
                if part:
                    yield part
                    part = []
                yield [conv]
            else:
                part.append(conv)
        if part:
            yield part


# ----------------------------------------------------------------------------- one conversation failing alone

class _StageLost(Exception):
    """A state's stage was discarded by other loads every time it was about to be swapped in."""


class _NotStaged(Exception):
    """The state wins under the lock but its messages are not all staged: the swap is rolled back, they are staged."""


def _conversation_fault(exc: BaseException) -> bool:
    """Whether `exc` is about what was written (a conversation's values or size), so the others can still be written:
    not the connection, the server's state, the credentials or a statement of chatetl's own (those fail the load)."""
    return isinstance(exc, _StageLost) or value_fault(exc)


def _failure(conv: Conversation, exc: BaseException) -> LoadSummary:
    """A conversation that could not be written, even alone: counted and described (key, file, the server's words)."""
    words = (str(exc).strip().splitlines() or [""])[0]
    key = conv.key if len(conv.key) <= 120 else f"{conv.key[:120]}… ({len(conv.key)} characters)"
    line = f"{key} ({conv.source_file or 'no file'}, {len(conv.messages)} messages): {type(exc).__name__}: {words}"[:500]
    log.warning("graph load: %s", line)
    return LoadSummary(conversations_failed=1, failures=[line])


def _counted(tx: Any, work: Callable[..., Any], *args: Any) -> tuple[Any, LoadSummary]:
    """`work(run, *args)` in `tx` (chatetl.graph.staging's steps): its result and what the server counted."""
    summary = LoadSummary()
    result = work(functools.partial(_run, tx, summary), *args)
    return result, summary


def _write(session: Any, work: Callable[..., Any], *args: Any) -> Any:
    """`work(tx, *args)` in one managed write transaction (chatetl.graph.connection.write_measured: TransactionTooBig
    at once where the server refuses it for its size); the LoadSummary it returns (alone, or second of a pair) gets
    the memory the server held for the transaction."""
    result, held = write_measured(session, work, *args)
    summary = result if isinstance(result, LoadSummary) else result[1]
    summary.largest_transaction_bytes = max(summary.largest_transaction_bytes, held)
    return result


# ----------------------------------------------------------------------------- conversations written in steps


def _swap(tx: Any, conv: Conversation, row: dict[str, Any], key: str, deep: bool, staged: bool,
          limit: int) -> tuple[bool, LoadSummary]:
    """A staged state's swap begins (chatetl.graph.staging), in one transaction: decided under the Conversation's
    lock; if it wins, the Conversation's properties and trace are written and the first `limit` messages swapped
    (all of them, for a state of fewer: then readers see the old state until this commits, and the new one after).
    `staged`: whether its messages were staged (a state expected to lose is not: if it wins after all, _NotStaged
    rolls the swap back). Returns (whether the swap is over, what was written)."""
    summary = LoadSummary()
    run = functools.partial(_run, tx, summary)
    [rec] = run(_UPSERT_CONVERSATIONS, rows=[row], fidelity=SOURCE_FIDELITY)
    outcome, over = rec["outcome"], True
    if outcome == "deleted":
        raise _DeletedMeanwhile([conv.key])
    if outcome == "busy":
        raise _SwapInProgress([rec["swapping_in"]])
    if outcome in ("created", "updated"):
        token = complete_stage(run, key) if staged else None
        if token is None:
            raise _NotStaged(key)
        begin_swap(run, conv.key, key)
        _write_traces(tx, summary, [conv], [conv] if outcome == "updated" else [], deep, safe=True, token=token)
        over, summary.messages_removed = swap_step(run, key, limit)
        summary.messages_written = len(conv.messages)
        summary.conversations_created, summary.conversations_updated = int(outcome == "created"), int(outcome == "updated")
    elif outcome == "unchanged":
        summary.conversations_unchanged = 1
    else:
        summary.conversations_skipped = 1
    return over, summary


class _Writer:
    """One load's writes: batches (a batch that fails for a conversation's sake is split until that conversation
    fails alone), staged conversations and their swaps, discarded stages, and the clean-up."""

    def __init__(self, deep: bool, stage_messages: int, swap_messages: int, stages: dict[str, list[str]]):
        self.deep = deep
        self.step = stage_messages
        self.swap_step = swap_messages
        self.stages = stages  # conversation key -> its stages in the graph that this load has not dealt with
        self.failed: set[str] = set()
        self.failures = LoadSummary()  # the conversations that failed before any transaction
        self.garbage = False

    def rows(self, batch: list[Conversation]) -> tuple[list[Conversation], list[dict[str, Any]]]:
        """The batch's graph rows (its state hashes); a conversation whose row cannot be made (a value that cannot
        be serialized, e.g. a lone surrogate) fails alone, and leaves the batch."""
        kept: list[Conversation] = []
        rows: list[dict[str, Any]] = []
        for conv in batch:
            try:
                row = conversation_graph_row(conv, self.deep, props=False)  # (_plan adds them where written)
            except (ValueError, OverflowError) as exc:
                self.failed.add(conv.key)
                self.failures.add(_failure(conv, exc))
                continue
            kept.append(conv)
            rows.append(row)
        return kept, rows

    def batch(self, session: Any, batch: list[Conversation], rows: list[dict[str, Any]],
              stored: dict[str, dict[str, Any]] | None) -> LoadSummary:
        """A batch in one transaction; failing for a conversation's sake, its halves are written apart (each
        whole or not at all), down to the one conversation, recorded as failed: never retried for minutes."""
        try:
            return self._attempt(session, batch, rows, stored)
        except Exception as exc:
            if not _conversation_fault(exc):
                raise
            if len(batch) == 1:
                self.failed.add(batch[0].key)
                return _failure(batch[0], exc)
        half = len(batch) // 2
        out = LoadSummary()
        for lo, hi in ((0, half), (half, len(batch))):
            part = batch[lo:hi]
            known = None if stored is None else {c.key: stored[c.key] for c in part if c.key in stored}
            out.add(self.batch(session, part, rows[lo:hi], known))
        return out

    def _attempt(self, session: Any, batch: list[Conversation], rows: list[dict[str, Any]],
                 stored: dict[str, dict[str, Any]] | None) -> LoadSummary:
        from neo4j.exceptions import ConstraintError, ResultFailedError

        total = LoadSummary()
        waited: list[str] = []
        for _ in range(STAGE_ATTEMPTS):
            try:
                try:
                    return total.add(_write(session, _write_batch, batch, self.deep, False, rows, stored))
                # created meanwhile by another load, or a node outlived its conversation: write it over. The
                # driver reports the constraint failure as ResultFailedError when a later result of the same
                # transaction is read first (the loads of test_resync's concurrent test hit both).
                except (ConstraintError, ResultFailedError):
                    return total.add(_write(session, _write_batch, batch, self.deep, True, rows))
            except _SwapInProgress as busy:  # another load began swapping one of them in meanwhile: finish it first
                waited = busy.args[0]
                for key in waited:
                    total.add(self.finish_swap(session, key))
                stored = None  # read again, in the write transaction
            except _DeletedMeanwhile as gone:
                waited = gone.args[0]
                stored = None
        raise _StageLost(f"conversations kept being swapped in or deleted by other loads: {waited}")

    def staged(self, session: Any, conv: Conversation, row: dict[str, Any], stored: dict[str, dict[str, Any]]) -> LoadSummary:
        """A conversation of more than `stage_messages` messages: staged in steps, then swapped in (the protocol of
        chatetl.graph.staging); one that fails is recorded as failed and its stage discarded."""
        key = stage_key(conv.key, row["state_hash"])
        pending = self.stages.pop(conv.key, [])  # its stages a stopped load left: this one's goes on, the others go
        quiet = _nothing_to_write([conv], [row], stored)
        if quiet is not None:
            return quiet.add(self.discard(session, pending))
        total = self.discard(session, [k for k in pending if k != key])
        row.setdefault("props", conversation_props(conv))
        old = stored.get(conv.key)
        wins = old is None or _decide(row, old) in ("created", "updated")  # decided again under the lock, at the swap
        plan: StagePlan | None = None
        try:
            for _ in range(STAGE_ATTEMPTS):
                if wins:
                    plan = plan or stage_plan(conv, row["state_hash"])
                    total.add(self._stage(session, plan))
                try:
                    over, swapped = _write(session, _swap, conv, row, key, self.deep, wins, self.swap_step)
                    break
                except _NotStaged:  # it wins after all, or its stage was discarded by another load meanwhile
                    wins = True
                except _DeletedMeanwhile:  # its Conversation was retracted while the swap waited: written anew
                    wins = True
                except _SwapInProgress as busy:  # another state of it is being swapped in: that one first
                    total.add(self.finish_swap(session, busy.args[0][0]))
            else:
                raise _StageLost(f"its stage was discarded {STAGE_ATTEMPTS} times by other loads before its swap")
            total.add(swapped)
            if not over:
                total.add(self.finish_swap(session, key))
        except Exception as exc:
            if not _conversation_fault(exc):
                raise
            self.failed.add(conv.key)
            return total.add(_failure(conv, exc)).add(self.discard(session, [key]))
        if plan is not None:
            total.conversations_staged += 1
            if not (swapped.conversations_created or swapped.conversations_updated):  # a newer state won meanwhile
                total.add(self.discard(session, [key]))
        return total.add(self.clean(session))

    def _stage(self, session: Any, plan: StagePlan) -> LoadSummary:
        """Every message of `plan` staged (going on from what is staged already), `step` messages per transaction;
        a step the server refuses for its size is tried again four times smaller; a step whose stage another load
        deleted while it waited for the lock is run again (the stage made anew, from the first message), at most
        STAGE_ATTEMPTS times."""
        total = LoadSummary()
        step, discarded = self.step, 0
        while True:
            try:
                (done, size), summary = _write(session, _counted, stage_step, plan, step)
            except TransactionTooBig:
                if step == 1:
                    raise
                step = max(1, step // 4)
                continue
            except StageDiscarded:
                discarded += 1
                if discarded >= STAGE_ATTEMPTS:
                    raise _StageLost(f"its stage was discarded {discarded} times by other loads while it was staged") from None
                continue
            total.add(summary)
            if done >= size:
                return total

    def finish_swap(self, session: Any, key: str) -> LoadSummary:
        """A swap that has begun goes on to its end, `swap_messages` messages per transaction (whichever load began
        it: it needs nothing but what the graph holds)."""
        total = LoadSummary()
        limit = self.swap_step
        while True:
            try:
                (over, removed), summary = _write(session, _counted, swap_step, key, limit)
            except TransactionTooBig:
                if limit == 1:
                    raise
                limit = max(1, limit // 4)
                continue
            total.add(summary)
            total.messages_removed += removed
            if over:
                self.garbage = True
                return total

    def discard(self, session: Any, keys: list[str]) -> LoadSummary:
        """Stages dropped (their StagedMessages are garbage from then on); never one whose swap has begun."""
        if not keys:
            return LoadSummary()
        dropped, summary = _write(session, _counted, drop_stages, keys)
        self.garbage = self.garbage or dropped > 0
        return summary

    def clean(self, session: Any) -> LoadSummary:
        """Retired and abandoned nodes deleted, `stage_messages` per transaction. Only ever garbage, so best effort: a
        step the server refuses leaves the rest to the next load (a lost connection fails the load as anywhere)."""
        from neo4j.exceptions import Neo4jError

        total = LoadSummary()
        if not session.execute_read(has_garbage):
            self.garbage = False
            return total
        limit = self.step
        while True:
            try:
                deleted, summary = _write(session, _counted, delete_garbage, limit)
            except TransactionTooBig:
                if limit == 1:
                    return total
                limit = max(1, limit // 4)
                continue
            except Neo4jError as exc:  # e.g. a concurrent load deleting the same nodes
                log.warning("graph load: clean-up left for the next load: %s", exc)
                return total
            total.add(summary)
            if deleted < limit:
                self.garbage = False
                return total


def load_conversations(
    driver: Any,
    conversations: Iterable[Conversation],
    database: str | None = None,
    batch_messages: int = DEFAULT_BATCH_MESSAGES,
    deep: bool = False,
    on_batch: Callable[[list[Conversation]], None] | None = None,
    parallel: bool = True,
    stage_messages: int = DEFAULT_STAGE_MESSAGES,
    swap_messages: int = DEFAULT_SWAP_MESSAGES,
) -> LoadSummary:
    """Write conversations (streamed), one managed transaction per batch; returns what changed.

    `deep` (off unless asked for: the asset and the CLI read `CHATETL_GRAPH_DEEP`) adds the
    DecisionTrace/TraceStep of every conversation with tool use. `on_batch` is
    called with each batch once it is committed, in the order of the batches (the CLI loads
    the batch's Documents there), without the conversations that failed.

    Each batch's stored states are read first, in a read transaction on a session of their own, in a
    thread: the next batch's are read while this one's hashes are made and it is written, unless
    it shares a conversation with a batch not yet committed (an unchanged rerun of the 100k messages
    of bench/graph_load.py: median 0.19 s against 0.24 s reading each batch's in its turn, 8 alternating
    runs). A batch of which nothing
    is written (unchanged or older states, no new source) opens no write transaction; one that meets stored states
    writes the conversations it changes REPLACE_MESSAGES messages a transaction (`_write_in_parts`). A batch
    made only of conversations that have no node yet, and sharing none with the batch in
    flight, is written on a second session in a thread (`parallel`, on by default: 1.65x one session
    on a quiet 2-core machine, bench/graph_load.py, 100k messages). A conversation another load
    created meanwhile makes the CREATE fail on the key constraint; that batch is then written again
    the MERGE way (tests/graph/test_resync.py's concurrent loads). `parallel=False` writes on one session.

    A conversation of more than `stage_messages` messages is written alone, in steps of that many,
    then swapped in, `swap_messages` messages a transaction (chatetl.graph.staging). A batch that fails for a conversation's sake (its size, or a value the
    server or the driver refuses) is split until that conversation fails alone: it is counted in
    `conversations_failed` and described in `failures`, and everything else is written.
    """
    ensure_schema(driver, database)
    total = LoadSummary()

    with ExitStack() as stack:
        session = stack.enter_context(write_session(driver, database))
        reads = stack.enter_context(write_session(driver, database))  # the reader thread's (a session is not shared)
        reader = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="chatetl-graph-read"))
        writer = _Writer(deep, stage_messages, swap_messages, session.execute_read(pending_stages))
        total.add(writer.clean(session))  # what a stopped load left
        second: Any = None
        pool: ThreadPoolExecutor | None = None
        in_flight: tuple[Future[LoadSummary], list[Conversation], set[str]] | None = None

        def committed(batch: list[Conversation]) -> None:
            if on_batch is not None:
                written = [c for c in batch if c.key not in writer.failed]
                if written:
                    on_batch(written)

        def finish() -> None:
            nonlocal in_flight
            if in_flight is not None:
                future, done, _ = in_flight
                in_flight = None
                total.add(future.result())
                committed(done)

        def read_ahead(upcoming: list[Conversation] | None, *written: Iterable[str]) -> Future[dict[str, dict[str, Any]]] | None:
            """The next batch's stored states, read while this one is written, unless one of its conversations is in
            a batch not yet committed (another state of it: read after that one, in its turn)."""
            if upcoming is None:
                return None
            keys = [c.key for c in upcoming]
            wanted = set(keys)
            if any(not wanted.isdisjoint(other) for other in written):
                return None
            return reader.submit(reads.execute_read, _read_state, keys)

        try:
            source = iter(batches(conversations, batch_messages, stage_messages))
            upcoming = next(source, None)
            upcoming_read = read_ahead(upcoming)
            while upcoming is not None:
                batch, reading = upcoming, upcoming_read
                keys = [c.key for c in batch]
                if reading is None:  # not read ahead
                    if in_flight is not None and not in_flight[2].isdisjoint(keys):
                        finish()  # another state of one of its conversations is being written: read after it
                    reading = reader.submit(reads.execute_read, _read_state, keys)
                upcoming = next(source, None)
                upcoming_read = read_ahead(upcoming, keys, in_flight[2] if in_flight is not None else ())
                batch, rows = writer.rows(batch)  # the state hashes, computed once (the server reads meanwhile)
                stored = reading.result()
                if not batch:
                    continue
                keys = [c.key for c in batch]
                swapping = sorted({old["swapping_in"] for old in stored.values() if old["swapping_in"]})
                if swapping:  # a swap a stopped (or a concurrent) load began: finished before they are written
                    finish()
                    for key in swapping:
                        total.add(writer.finish_swap(session, key))
                    stored = session.execute_read(_read_state, keys)
                if len(batch) == 1 and len(batch[0].messages) > stage_messages:
                    finish()  # the batches before it first (on_batch in order)
                    total.add(writer.staged(session, batch[0], rows[0], stored))
                    committed(batch)
                    continue
                total.add(writer.discard(session, [k for key in keys for k in writer.stages.pop(key, [])]))
                quiet = _nothing_to_write(batch, rows, stored)
                if quiet is not None:
                    finish()  # the batches before it first (on_batch in order)
                    total.add(quiet)
                    committed(batch)
                    continue
                if parallel and not stored:  # all new (and none in the batch in flight)
                    if in_flight is None:  # on the second session, while the next batch is read and written here
                        if pool is None:
                            pool = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="chatetl-graph"))
                            second = stack.enter_context(write_session(driver, database))
                        in_flight = (pool.submit(writer.batch, second, batch, rows, stored), batch, set(keys))
                        continue
                    summary = writer.batch(session, batch, rows, stored)  # beside the one in flight
                    finish()
                else:
                    finish()  # states that replace others are written alone (a batch of only new ones: parallel off)
                    if stored:
                        summary = _write_in_parts(writer, session, batch, rows, stored)
                    else:
                        summary = writer.batch(session, batch, rows, stored)
                total.add(summary)
                committed(batch)
            finish()
            total.add(writer.failures)
            if writer.garbage:
                total.add(writer.clean(session))
        finally:
            if in_flight is not None:  # an error here: the batch in flight still ends before the sessions close
                in_flight[0].exception()
    return total


def load_graph_partition(store: ObjectStore, driver: Any, day: str, database: str | None = None, deep: bool = False) -> LoadSummary:
    """A day's normalized tables into the graph, one upload after another (`load_conversations` each).

    Each upload's key/state columns are read first (its `state_hash` column, computed at normalize time) and the
    graph's stored states of those keys (`_unchanged_in_graph`); only the conversations that would be written are
    built from the messages table and loaded. The others are counted as the load would count them (unchanged, or
    skipped: older) and cost one column read and one index lookup each: an unchanged rerun builds nothing and writes
    nothing. Tables written before the `state_hash` column are read whole, as before."""
    total = LoadSummary()
    for _uid, c_path, m_path in iter_partition_files(store, day):
        rows = None
        states = table_states(c_path, m_path)
        if states is not None:
            quiet, rows = _unchanged_in_graph(driver, database, states, deep)
            total.add(quiet)
        convs = iter_conversations(c_path, m_path, rows)
        total.add(load_conversations(driver, (c for c, _ in convs), database=database, deep=deep))
    return total


CHECK_KEYS = 5000  # keys per read transaction of _unchanged_in_graph


def _unchanged_in_graph(driver: Any, database: str | None, states: list[dict[str, Any]],
                        deep: bool) -> tuple[LoadSummary, list[int]]:
    """From one upload's table states (chatetl.tables.table_states) and the graph's stored states (read-only, in
    transactions of CHECK_KEYS keys): what a load would count for the states it would not write at all (the same
    state, or an older one, that brings no new format or file), and the positions of the others, which the load
    must have whole. A state is always loaded when it has no stored hash, when its key is twice in the upload (the
    first decides what the second meets), when its conversation is being swapped in or has a stage in the graph
    (chatetl.graph.staging: the load finishes or discards those)."""
    keys = list(dict.fromkeys(s["conversation_key"] for s in states))
    twice = {k for k, n in Counter(s["conversation_key"] for s in states).items() if n > 1}
    with write_session(driver, database) as session:
        staged = session.execute_read(pending_stages)
        stored: dict[str, dict[str, Any]] = {}
        for lo in range(0, len(keys), CHECK_KEYS):
            stored.update(session.execute_read(_read_state, keys[lo:lo + CHECK_KEYS]))
    summary = LoadSummary()
    load: list[int] = []
    for i, state in enumerate(states):
        key = state["conversation_key"]
        old = stored.get(key)
        if old is None or state["state_hash"] is None or key in twice or key in staged or old["swapping_in"]:
            load.append(i)
            continue
        row = {"key": key, "state_version": state["state_version"], "state_hash": state["state_hash"],
               "state_rank": SOURCE_FIDELITY.get(state["source"], 0), "arrived_via": state["source"],
               "source_file": state["source_file"], "deep": deep}
        outcome = None if _new_sources(row, old) else _decide(row, old)
        if outcome == "unchanged":
            summary.conversations_unchanged += 1
        elif outcome == "skipped":
            summary.conversations_skipped += 1
        else:
            load.append(i)
    return summary, load
