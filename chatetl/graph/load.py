"""Load conversations into Neo4j: batched UNWIND writes, newest state wins, reruns change nothing.

Conversations are grouped into batches of about `batch_messages` messages (a conversation is
never split; two states of one conversation never share a batch) and each batch is written in
one managed transaction (retried on transient errors such as deadlocks), by a handful of
UNWIND statements: no per-row round trips. A batch commits whole or not at all, so a load
that is interrupted (process killed, server restarted) and run again ends in the same graph.

Per conversation (key `{platform}:{conversation_id}`: the same chat arriving as a ChatGPT
account export, a chat-export file and a REX record is one node):
- a read-only check first reads the stored state of every conversation of the batch (key,
  version, hash, sources), in its own read transaction while the state hashes are computed
  (once per load); a batch of which nothing is written opens no write transaction; a conversation with no
  node is CREATEd, one whose state does not win and that brings no new format or file is not
  written at all (an unchanged rerun reports 0 updates in the server's counters, kept in
  `graph_updates`); the others are write-locked and decided again under the lock, so two loads
  writing the same conversation at once serialize instead of losing an update (two creating it
  at once: the second fails on the key constraint and writes its batch again the MERGE way);
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
the check.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from chatetl.graph.connection import write_session
from chatetl.graph.properties import (
    MESSAGE_PROPERTIES,
    conversation_graph_row,
    conversation_props,
    message_key,
    message_links,
    message_values,
    next_ids,
)
from chatetl.graph.schema import ensure_schema
from chatetl.graph.traces import trace_for
from chatetl.model import SOURCE_FIDELITY, Conversation, state_batches
from chatetl.storage import ObjectStore
from chatetl.tables import iter_partition
from chatetl.tally import Tally

DEFAULT_BATCH_MESSAGES = 5000


@dataclass
class LoadSummary(Tally):
    conversations_created: int = 0
    conversations_updated: int = 0
    conversations_unchanged: int = 0
    conversations_skipped: int = 0  # an older state (or a poorer one of the same time): recorded as a source only
    messages_written: int = 0
    messages_removed: int = 0
    traces_written: int = 0
    trace_steps_written: int = 0
    traces_removed: int = 0
    graph_updates: int = 0  # what the server reported: nodes, relationships, labels and properties written or deleted

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


_COUNTERS = ("nodes_created", "nodes_deleted", "relationships_created", "relationships_deleted", "properties_set",
             "labels_added", "labels_removed")

# read-only: what decides whether a state wins (no lock: a state that must be written is decided again under the lock)
_CHECK_CONVERSATIONS = """
UNWIND $keys AS key
MATCH (c:Conversation {key: key})
RETURN key, c.state_version AS version, c.state_hash AS hash, c.state_source AS state_source, c.state_file AS state_file,
       coalesce(c.deep, false) AS deep, coalesce(c.sources, []) AS sources, coalesce(c.source_files, []) AS source_files
"""

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

# a node that exists: locked, its state read again and decided under the lock
_UPSERT_CONVERSATIONS = """
UNWIND $rows AS row
MERGE (c:Conversation {key: row.key})
SET c._lock = true
WITH c, row, c.state_version AS old_version, c.state_hash AS old_hash,
     coalesce($fidelity[c.state_source], 0) AS old_rank
WITH c, row,
     CASE
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
RETURN row.key AS key, outcome
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


def _run(tx: Any, summary: LoadSummary, query: str, **params: Any) -> list[Any]:
    """Run one statement; its records, its updates counted in `summary.graph_updates`."""
    result = tx.run(query, params)
    records = list(result)
    counters = result.consume().counters
    summary.graph_updates += sum(getattr(counters, name) for name in _COUNTERS)
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
        for n, m in enumerate(conv.messages):
            for col, value in zip(columns, message_values(conv, m)):
                col.append(value)
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
        chunk.append({"key": conv.key, "messages": [_set_props(conv, m) for m in conv.messages]})
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


def _set_props(conv: Conversation, m: Any) -> dict[str, Any]:
    """A message's properties without the empty ones (`SET m = props` leaves them unset): less to send."""
    return {k: v for k, v in zip(MESSAGE_PROPERTIES, message_values(conv, m)) if v is not None}


def _read_state(tx: Any, keys: list[str]) -> dict[str, dict[str, Any]]:
    """The stored state of the conversations of `keys` that have a node (read-only, no locks)."""
    return {r["key"]: dict(r) for r in tx.run(_CHECK_CONVERSATIONS, keys=keys)}


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
        rows = [conversation_graph_row(c, deep) for c in convs]
    if stored is None:
        stored = _read_state(tx, [c.key for c in convs])
    outcomes, to_create, to_upsert = _plan(convs, rows, stored, safe)
    if to_create:
        _run(tx, summary, _CREATE_CONVERSATIONS, rows=sorted(to_create, key=lambda r: r["key"]))
    if to_upsert:
        to_upsert.sort(key=lambda r: r["key"])  # one lock order: fewer deadlocks
        for rec in _run(tx, summary, _UPSERT_CONVERSATIONS, rows=to_upsert, fidelity=SOURCE_FIDELITY):
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

    traces = [t for t in (trace_for(c) for c in accepted) if t is not None] if deep else []
    traced = {t["conversation_key"] for t in traces}
    untraced = [c.key for c in replaced if c.key not in traced]
    if untraced:
        [record] = _run(tx, summary, _REMOVE_TRACES, keys=untraced)
        summary.traces_removed = record["removed"]
    if traces:
        if safe:
            _run(tx, summary, _REMOVE_STEPS, keys=[s["key"] for t in traces for s in t["steps"]])
        _run(tx, summary, _WRITE_TRACES, traces=traces)
        _run(tx, summary, _LINK_TRACE_STEPS, ids=[t["id"] for t in traces])
        summary.traces_written = len(traces)
        summary.trace_steps_written = sum(len(t["steps"]) for t in traces)
    return summary


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


def batches(conversations: Iterable[Conversation], max_messages: int = DEFAULT_BATCH_MESSAGES) -> Iterator[list[Conversation]]:
    """Batches bounded by message count (see chatetl.model.state_batches)."""
    return state_batches(conversations, max_messages, weight=lambda conv: len(conv.messages) + 1)


def load_conversations(
    driver: Any,
    conversations: Iterable[Conversation],
    database: str | None = None,
    batch_messages: int = DEFAULT_BATCH_MESSAGES,
    deep: bool = False,
    on_batch: Callable[[list[Conversation]], None] | None = None,
    parallel: bool = True,
) -> LoadSummary:
    """Write conversations (streamed), one managed transaction per batch; returns what changed.

    `deep` (off unless asked for: the asset and the CLI read `CHATETL_GRAPH_DEEP`) adds the
    DecisionTrace/TraceStep of every conversation with tool use. `on_batch` is
    called with each batch once it is committed, in the order of the batches (the CLI loads
    the batch's Documents there).

    Each batch's stored states are read first, in a read transaction; a batch of which nothing
    is written (unchanged or older states, no new source) opens no write transaction. A batch
    made only of conversations that have no node yet, and sharing none with the batch in
    flight, is written on a second session in a thread (`parallel`, on by default: 1.65x one session
    on a quiet 2-core machine, bench/graph_load.py, 100k messages). A conversation another load
    created meanwhile makes the CREATE fail on the key constraint; that batch is then written again
    the MERGE way (tests/graph/test_resync.py's concurrent loads). `parallel=False` writes on one session.
    """
    ensure_schema(driver, database)
    total = LoadSummary()
    from neo4j.exceptions import ConstraintError, ResultFailedError

    def write(session: Any, batch: list[Conversation], rows: list[dict[str, Any]], stored: dict[str, dict[str, Any]]) -> LoadSummary:
        try:
            return session.execute_write(_write_batch, batch, deep, False, rows, stored)
        # created meanwhile by another load, or a node outlived its conversation: write it over. The
        # driver reports the constraint failure as ResultFailedError when a later result of the same
        # transaction is read first (the loads of test_resync's concurrent test hit both).
        except (ConstraintError, ResultFailedError):
            return session.execute_write(_write_batch, batch, deep, True, rows)

    with ExitStack() as stack:
        session = stack.enter_context(write_session(driver, database))
        reader = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="chatetl-graph-read"))
        second: Any = None
        pool: ThreadPoolExecutor | None = None
        in_flight: tuple[Future[LoadSummary], list[Conversation], set[str]] | None = None

        def finish() -> None:
            nonlocal in_flight
            if in_flight is not None:
                future, done, _ = in_flight
                in_flight = None
                total.add(future.result())
                if on_batch is not None:
                    on_batch(done)

        try:
            for batch in batches(conversations, batch_messages):
                keys = [c.key for c in batch]
                if in_flight is not None and not in_flight[2].isdisjoint(keys):
                    finish()  # another state of one of its conversations is being written: read after it
                reading = reader.submit(session.execute_read, _read_state, keys)  # the server reads while the hashes are made
                rows = [conversation_graph_row(c, deep) for c in batch]  # the state hashes, computed once
                stored = reading.result()
                quiet = _nothing_to_write(batch, rows, stored)
                if quiet is not None:
                    finish()  # the batches before it first (on_batch in order)
                    total.add(quiet)
                    if on_batch is not None:
                        on_batch(batch)
                    continue
                if parallel and not stored:  # all new (and none in the batch in flight)
                    if in_flight is None:  # on the second session, while the next batch is read and written here
                        if pool is None:
                            pool = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="chatetl-graph"))
                            second = stack.enter_context(write_session(driver, database))
                        in_flight = (pool.submit(write, second, batch, rows, stored), batch, set(keys))
                        continue
                    summary = write(session, batch, rows, stored)  # beside the one in flight
                    finish()
                else:
                    finish()  # states that replace others are written alone
                    summary = write(session, batch, rows, stored)
                total.add(summary)
                if on_batch is not None:
                    on_batch(batch)
            finish()
        finally:
            if in_flight is not None:  # an error here: the batch in flight still ends before the sessions close
                in_flight[0].exception()
    return total


def load_graph_partition(store: ObjectStore, driver: Any, day: str, database: str | None = None, deep: bool = False) -> LoadSummary:
    total = LoadSummary()
    for _uid, convs in iter_partition(store, day):
        total.add(load_conversations(driver, (c for c, _ in convs), database=database, deep=deep))
    return total
