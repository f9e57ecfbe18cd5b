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
from typing import TYPE_CHECKING, Any, NamedTuple

from chatetl.graph.connection import GraphSession, write_session
from chatetl.graph.decide import quiet_outcome
from chatetl.graph.keepsakes import load_upload_keepsakes
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
    with ExitStack() as stack:
        load = _Load(stack, driver, database, on_batch, parallel, deep=deep, stage_messages=stage_messages, swap_messages=swap_messages)
        try:
            load.run(batches(conversations, batch_messages, stage_messages))
        finally:
            load.settle()  # an error here: the batch in flight still ends before the sessions close
        return load.total


class _InFlight(NamedTuple):
    """A batch being written on the second session: its write, its conversations and their keys."""

    future: Future[LoadSummary]
    batch: list[Conversation]
    keys: set[str]


class _Load:
    """One load's sessions and threads, and the order its batches are written and committed in: the next batch's
    stored states read on a thread of their own while this one is written; a batch of new conversations written
    on a second session (the lane), while the next batch is read and written on the first. `on_batch` sees the
    batches in their order whichever session wrote them."""

    def __init__(self, stack: ExitStack, driver: Driver, database: str | None, on_batch: Callable[[list[Conversation]], None] | None,
                 parallel: bool, *, deep: bool, stage_messages: int, swap_messages: int) -> None:
        self.stack, self.driver, self.database = stack, driver, database
        self.on_batch, self.parallel = on_batch, parallel
        self.session = stack.enter_context(write_session(driver, database))
        self.reads = stack.enter_context(write_session(driver, database))  # the reader thread's (a session is not shared)
        self.reader = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="chatetl-graph-read"))
        self.writer = Writer(deep, stage_messages, swap_messages, self.session.execute_read(pending_stages))
        self.lane: tuple[ThreadPoolExecutor, GraphSession] | None = None  # the second session, and its thread
        self.in_flight: _InFlight | None = None
        self.total = LoadSummary()

    def run(self, source: Iterator[list[Conversation]]) -> None:
        """Every batch of `source` written, each batch's stored states read ahead where they can be."""
        self.total.add(self.writer.clean(self.session))  # what a stopped load left
        upcoming = next(source, None)
        upcoming_read = self._read_ahead(upcoming)
        while upcoming is not None:
            batch, reading = upcoming, upcoming_read
            keys = [c.key for c in batch]
            if reading is None:  # not read ahead
                if self.in_flight is not None and not self.in_flight.keys.isdisjoint(keys):
                    self._finish()  # another state of one of its conversations is being written: read after it
                reading = self.reader.submit(self.reads.execute_read, read_state, keys)
            upcoming = next(source, None)
            upcoming_read = self._read_ahead(upcoming, keys, self.in_flight.keys if self.in_flight is not None else ())
            batch, rows = self.writer.rows(batch)  # the state hashes, computed once (the server reads meanwhile)
            stored = reading.result()
            if batch:
                self._write(batch, rows, stored)
        self._finish()
        self.total.add(self.writer.failures)
        if self.writer.garbage:
            self.total.add(self.writer.clean(self.session))

    def settle(self) -> None:
        """The batch in flight ended (whatever happened here), before the sessions close."""
        if self.in_flight is not None:
            self.in_flight.future.exception()

    def _read_ahead(self, upcoming: list[Conversation] | None, *written: Iterable[str]) -> Future[Stored] | None:
        """The next batch's stored states, read while this one is written, unless one of its conversations is in
        a batch not yet committed (another state of it: read after that one, in its turn)."""
        if upcoming is None:
            return None
        keys = [c.key for c in upcoming]
        wanted = set(keys)
        if any(not wanted.isdisjoint(other) for other in written):
            return None
        return self.reader.submit(self.reads.execute_read, read_state, keys)

    def _write(self, batch: list[Conversation], rows: list[Row], stored: Stored) -> None:
        """One batch, by the way its stored states call for: staged, counted without a write, on the lane, in parts
        (it replaces stored states) or whole."""
        writer, session = self.writer, self.session
        keys = [c.key for c in batch]
        stored = self._swaps_finished(keys, stored)
        if len(batch) == 1 and len(batch[0].messages) > writer.step:
            self._finish()  # the batches before it first (on_batch in order)
            self._committed(batch, writer.staged(session, batch[0], rows[0], stored))
            return
        self.total.add(writer.discard(session, [k for key in keys for k in writer.stages.pop(key, [])]))
        quiet = nothing_to_write(rows, stored)
        if quiet is not None:
            self._finish()  # the batches before it first (on_batch in order)
            self._committed(batch, quiet)
            return
        if self.parallel and not stored:  # all new (and none in the batch in flight)
            if self.in_flight is None:  # on the second session, while the next batch is read and written here
                lane = self._lane()
                self.in_flight = _InFlight(lane[0].submit(writer.batch, lane[1], batch, rows, stored), batch, set(keys))
                return
            summary = writer.batch(session, batch, rows, stored)  # beside the one in flight
            self._finish()
        else:
            self._finish()  # states that replace others are written alone (a batch of only new ones: parallel off)
            summary = writer.in_parts(session, batch, rows, stored) if stored else writer.batch(session, batch, rows, stored)
        self._committed(batch, summary)

    def _swaps_finished(self, keys: list[str], stored: Stored) -> Stored:
        """Swaps a stopped (or a concurrent) load began on these conversations finished before they are written;
        their stored states then read again."""
        swapping = sorted({old["swapping_in"] for old in stored.values() if old["swapping_in"]})
        if not swapping:
            return stored
        self._finish()
        for key in swapping:
            self.total.add(self.writer.finish_swap(self.session, key))
        return self.session.execute_read(read_state, keys)

    def _lane(self) -> tuple[ThreadPoolExecutor, GraphSession]:
        """The second session and its thread, opened when first needed."""
        if self.lane is None:
            self.lane = (self.stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="chatetl-graph")),
                         self.stack.enter_context(write_session(self.driver, self.database)))
        return self.lane

    def _finish(self) -> None:
        """The batch in flight committed (and counted, and given to `on_batch`)."""
        if self.in_flight is not None:
            future, done, _ = self.in_flight
            self.in_flight = None
            self._committed(done, future.result())

    def _committed(self, batch: list[Conversation], summary: LoadSummary) -> None:
        self.total.add(summary)
        if self.on_batch is not None:
            written = [c for c in batch if c.key not in self.writer.failed]
            if written:
                self.on_batch(written)


def load_graph_partition(store: ObjectStore, driver: Driver, day: str, database: str | None = None, deep: bool = False) -> LoadSummary:
    """A day's normalized tables into the graph, one upload after another (`load_conversations` each).

    Each upload's key/state columns are read first (its `state_hash` column, computed at normalize time) and the
    graph's stored states of those keys (`_unchanged_in_graph`); only the conversations that would be written are
    built from the messages table and loaded. The others are counted as the load would count them (unchanged, or
    skipped: older) and cost one column read and one index lookup each: an unchanged rerun builds nothing and writes
    nothing. Tables written before the `state_hash` column are read whole, as before. What each upload keeps
    beside its chats follows its conversations (chatetl.graph.keepsakes)."""
    total = LoadSummary()
    for uid, c_path, m_path in iter_partition_files(store, day):
        rows = None
        states = table_states(c_path, m_path)
        if states is not None:
            quiet, rows = _unchanged_in_graph(driver, database, states, deep)
            total.add(quiet)
        convs = iter_conversations(c_path, m_path, rows)
        total.add(load_conversations(driver, (c for c, _ in convs), database=database, deep=deep))
        load_upload_keepsakes(store, driver, day, uid, c_path, database)  # (after its conversations: they are linked)
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
