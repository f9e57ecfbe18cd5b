"""Load conversations into Neo4j: batched writes, the newest state wins, reruns change nothing.

Conversations stream in batches of about `batch_messages` messages (a conversation is never split,
and two states of one conversation never share a batch: model.state_batches); each batch is
written in one managed transaction (chatetl.graph.upsert), so a load interrupted anywhere and run
again ends in the same graph. A conversation's key is `{platform}:{conversation_id}`: the same chat
arriving through several formats is one node. Which state wins is chatetl.graph.decide's rule;
how one conversation fails alone, and how a big one is written in steps, chatetl.graph.writer's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from chatetl.graph.connection import GraphSession, write_session
from chatetl.graph.decide import quiet_outcome
from chatetl.graph.schema import ensure_schema
from chatetl.graph.staging import pending_stages
from chatetl.graph.summary import LoadSummary
from chatetl.graph.upsert import Row, Stored, read_state
from chatetl.graph.writer import Writer, nothing_to_write
from chatetl.model import SOURCE_FIDELITY, Conversation, state_batches
from chatetl.storage import ObjectStore
from chatetl.tables import iter_conversations, iter_partition_files, table_states

if TYPE_CHECKING:
    from neo4j import Driver

__all__ = ["DEFAULT_BATCH_MESSAGES", "LoadSummary", "batches", "load_conversations", "load_graph_partition"]

DEFAULT_BATCH_MESSAGES = 5000
DEFAULT_STAGE_MESSAGES = 5000  # a conversation of more messages is written in steps of this many (chatetl.graph.staging)
DEFAULT_SWAP_MESSAGES = 20000  # ... and swapped in this many per transaction (labels and links only: a few KB a message)
CHECK_KEYS = 5000  # keys per read transaction of _unchanged_in_graph


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


def load_conversations(
    driver: Driver,
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

    Each batch's stored states are read first, in a read transaction on a session of their own, in a thread:
    the next batch's are read while this one's hashes are made and it is written, unless it shares a conversation
    with a batch not yet committed (then after that one commits). A batch of which nothing is written (unchanged
    or older states, no new source) opens no write transaction; one that meets stored states writes the
    conversations it changes a few at a time (`Writer.in_parts`). A batch made only of conversations that have
    no node yet, and sharing none with the batch in flight, is written on a second session in a thread
    (`parallel`, on by default; bench/graph_load.py measures it); `parallel=False` writes on one session. A
    conversation another load created meanwhile makes the CREATE fail on the key constraint; that batch is
    then written again the MERGE way.

    A conversation of more than `stage_messages` messages is written alone, in steps of that many, then swapped
    in, `swap_messages` messages a transaction (chatetl.graph.staging). A batch that fails for a conversation's
    sake (its size, or a value the server or the driver refuses) is split until that conversation fails alone:
    it is counted in `conversations_failed` and described in `failures`, and everything else is written.
    """
    ensure_schema(driver, database)
    total = LoadSummary()

    with ExitStack() as stack:
        session = stack.enter_context(write_session(driver, database))
        reads = stack.enter_context(write_session(driver, database))  # the reader thread's (a session is not shared)
        reader = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="chatetl-graph-read"))
        writer = Writer(deep, stage_messages, swap_messages, session.execute_read(pending_stages))
        total.add(writer.clean(session))  # what a stopped load left
        lane: tuple[ThreadPoolExecutor, GraphSession] | None = None  # the second session, and its thread
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

        def read_ahead(upcoming: list[Conversation] | None, *written: Iterable[str]) -> Future[Stored] | None:
            """The next batch's stored states, read while this one is written, unless one of its conversations is in
            a batch not yet committed (another state of it: read after that one, in its turn)."""
            if upcoming is None:
                return None
            keys = [c.key for c in upcoming]
            wanted = set(keys)
            if any(not wanted.isdisjoint(other) for other in written):
                return None
            return reader.submit(reads.execute_read, read_state, keys)

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
                    reading = reader.submit(reads.execute_read, read_state, keys)
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
                    stored = session.execute_read(read_state, keys)
                if len(batch) == 1 and len(batch[0].messages) > stage_messages:
                    finish()  # the batches before it first (on_batch in order)
                    total.add(writer.staged(session, batch[0], rows[0], stored))
                    committed(batch)
                    continue
                total.add(writer.discard(session, [k for key in keys for k in writer.stages.pop(key, [])]))
                quiet = nothing_to_write(rows, stored)
                if quiet is not None:
                    finish()  # the batches before it first (on_batch in order)
                    total.add(quiet)
                    committed(batch)
                    continue
                if parallel and not stored:  # all new (and none in the batch in flight)
                    if in_flight is None:  # on the second session, while the next batch is read and written here
                        if lane is None:
                            lane = (stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="chatetl-graph")),
                                    stack.enter_context(write_session(driver, database)))
                        in_flight = (lane[0].submit(writer.batch, lane[1], batch, rows, stored), batch, set(keys))
                        continue
                    summary = writer.batch(session, batch, rows, stored)  # beside the one in flight
                    finish()
                else:
                    finish()  # states that replace others are written alone (a batch of only new ones: parallel off)
                    if stored:
                        summary = writer.in_parts(session, batch, rows, stored)
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


def load_graph_partition(store: ObjectStore, driver: Driver, day: str, database: str | None = None, deep: bool = False) -> LoadSummary:
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


def _unchanged_in_graph(driver: Driver, database: str | None, states: list[dict[str, Any]],
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
        stored: Stored = {}
        for lo in range(0, len(keys), CHECK_KEYS):
            stored.update(session.execute_read(read_state, keys[lo:lo + CHECK_KEYS]))
    summary = LoadSummary()
    load: list[int] = []
    for i, state in enumerate(states):
        key = state["conversation_key"]
        old = stored.get(key)
        if old is None or state["state_hash"] is None or key in twice or key in staged or old["swapping_in"]:
            load.append(i)
            continue
        row: Row = {"key": key, "state_version": state["state_version"], "state_hash": state["state_hash"],
               "state_rank": SOURCE_FIDELITY.get(state["source"], 0), "arrived_via": state["source"],
               "source_file": state["source_file"], "deep": deep}
        outcome = quiet_outcome(row, old)
        if outcome == "unchanged":
            summary.conversations_unchanged += 1
        elif outcome == "skipped":
            summary.conversations_skipped += 1
        else:
            load.append(i)
    return summary, load
