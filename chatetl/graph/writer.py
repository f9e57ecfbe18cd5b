"""One load's writes, each conversation failing alone: batches, staged conversations and their swaps, clean-up.

A batch that fails for a conversation's sake (a value the server or the driver refuses, e.g. an
id longer than an index key may be; or a transaction too big for the server's memory, which
Neo4j reports as transient: retried, it would fail again) is split in halves and written again,
each half whole or not at all, until that conversation fails alone; it is counted and described
(chatetl.graph.summary.failure), the rest is written, and the next load tries it again. What is
not about one conversation (the connection, the server's state, a refused login, a statement of
chatetl's own) fails the load.

A conversation of more messages than a transaction should hold is staged in bounded steps and
swapped in (chatetl.graph.staging), decided under its node's lock at the swap like any other.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from chatetl.graph.connection import (
    GraphSession,
    TransactionFunction,
    TransactionTooBig,
    value_fault,
    write_measured,
)
from chatetl.graph.decide import WRITTEN, decide, quiet_outcome
from chatetl.graph.properties import conversation_graph_row, conversation_props
from chatetl.graph.staging import (
    Run,
    StageDiscarded,
    StagePlan,
    delete_garbage,
    drop_stages,
    has_garbage,
    stage_key,
    stage_plan,
    stage_step,
    swap_step,
)
from chatetl.graph.summary import LoadSummary, failure
from chatetl.graph.upsert import (
    DeletedMeanwhile,
    NotStaged,
    Row,
    Stored,
    SwapInProgress,
    run,
    swap,
    write_batch,
)
from chatetl.model import Conversation

if TYPE_CHECKING:
    from neo4j import ManagedTransaction

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")
# what a write transaction of the load returns: its summary, alone or second of a pair
Summarized = TypeVar("Summarized", bound="LoadSummary | tuple[Any, LoadSummary]")

# A batch that replaces stored states writes the conversations it changes in transactions of about this many
# messages: deleting the old messages makes a transaction's cost grow faster than its size.
REPLACE_MESSAGES = 1000
STAGE_ATTEMPTS = 3  # a stage discarded by a concurrent load (found at the swap, or by a step) is staged again this many times at most


class StageLost(Exception):
    """A state's stage was discarded by other loads every time it was about to be swapped in."""


def conversation_fault(exc: BaseException) -> bool:
    """Whether `exc` is about what was written (a conversation's values or size), so the others can still be written:
    not the connection, the server's state, the credentials or a statement of chatetl's own (those fail the load)."""
    return isinstance(exc, StageLost) or value_fault(exc)


def nothing_to_write(rows: list[Row], stored: Stored) -> LoadSummary | None:
    """The summary of rows the stored states say write nothing (chatetl.graph.decide.quiet_outcome: no write
    transaction at all); None when one of them must be written."""
    summary = LoadSummary()
    for row in rows:
        outcome = quiet_outcome(row, stored.get(row["key"]))
        if outcome is None:
            return None
        if outcome == "unchanged":
            summary.conversations_unchanged += 1
        else:
            summary.conversations_skipped += 1
    return summary


def _counted(tx: ManagedTransaction, step: Callable[Concatenate[Run, P], T], *args: P.args, **kwargs: P.kwargs) -> tuple[T, LoadSummary]:
    """`step(run, *args)` in `tx` (chatetl.graph.staging's steps): its result and what the server counted."""
    summary = LoadSummary()
    result = step(functools.partial(run, tx, summary), *args, **kwargs)
    return result, summary


def _write(session: GraphSession, work: TransactionFunction[P, Summarized], *args: P.args, **kwargs: P.kwargs) -> Summarized:
    """`work(tx, *args)` in one managed write transaction (chatetl.graph.connection.write_measured: TransactionTooBig
    at once where the server refuses it for its size); the LoadSummary it returns (alone, or second of a pair) gets
    the memory the server held for the transaction."""
    result, held = write_measured(session, work, *args, **kwargs)
    summary = result if isinstance(result, LoadSummary) else result[1]
    summary.largest_transaction_bytes = max(summary.largest_transaction_bytes, held)
    return result


class Writer:
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

    def rows(self, batch: list[Conversation]) -> tuple[list[Conversation], list[Row]]:
        """The batch's graph rows (its state hashes); a conversation whose row cannot be made (a value that cannot
        be serialized, e.g. a lone surrogate) fails alone, and leaves the batch."""
        kept: list[Conversation] = []
        rows: list[Row] = []
        for conv in batch:
            try:
                row = conversation_graph_row(conv, self.deep, props=False)  # (upsert.plan adds them where written)
            except (ValueError, OverflowError) as exc:
                self.failed.add(conv.key)
                self.failures.add(failure(conv, exc))
                continue
            kept.append(conv)
            rows.append(row)
        return kept, rows

    def batch(self, session: GraphSession, batch: list[Conversation], rows: list[Row], stored: Stored | None) -> LoadSummary:
        """A batch in one transaction; failing for a conversation's sake, its halves are written apart (each
        whole or not at all), down to the one conversation, recorded as failed: never retried for minutes."""
        try:
            return self._attempt(session, batch, rows, stored)
        except Exception as exc:
            if not conversation_fault(exc):
                raise
            if len(batch) == 1:
                self.failed.add(batch[0].key)
                return failure(batch[0], exc)
        half = len(batch) // 2
        out = LoadSummary()
        for lo, hi in ((0, half), (half, len(batch))):
            part = batch[lo:hi]
            known = None if stored is None else {c.key: stored[c.key] for c in part if c.key in stored}
            out.add(self.batch(session, part, rows[lo:hi], known))
        return out

    def in_parts(self, session: GraphSession, batch: list[Conversation], rows: list[Row], stored: Stored) -> LoadSummary:
        """A batch that meets stored states: its conversations that write nothing (unchanged or older states bringing
        no new source) counted, the others written in order, REPLACE_MESSAGES messages a transaction at most (a
        conversation is never split)."""
        total = LoadSummary()
        part: list[int] = []
        size = 0

        def write() -> None:
            nonlocal part, size
            if part:
                convs = [batch[i] for i in part]
                total.add(self.batch(session, convs, [rows[i] for i in part], {c.key: stored[c.key] for c in convs if c.key in stored}))
            part, size = [], 0

        for i, (conv, row) in enumerate(zip(batch, rows)):
            quiet = nothing_to_write([row], stored)
            if quiet is not None:
                total.add(quiet)
                continue
            if part and size + len(conv.messages) > REPLACE_MESSAGES:
                write()
            part.append(i)
            size += len(conv.messages)
        write()
        return total

    def _attempt(self, session: GraphSession, batch: list[Conversation], rows: list[Row], stored: Stored | None) -> LoadSummary:
        from neo4j.exceptions import ConstraintError, ResultFailedError

        total = LoadSummary()
        waited: list[str] = []
        for _ in range(STAGE_ATTEMPTS):
            try:
                try:
                    return total.add(_write(session, write_batch, batch, self.deep, False, rows, stored))
                # created meanwhile by another load, or a node outlived its conversation: write it over. The
                # driver reports the constraint failure as ResultFailedError when a later result of the same
                # transaction is read first (the loads of test_resync's concurrent test hit both).
                except (ConstraintError, ResultFailedError):
                    return total.add(_write(session, write_batch, batch, self.deep, True, rows))
            except SwapInProgress as busy:  # another load began swapping one of them in meanwhile: finish it first
                waited = busy.args[0]
                for key in waited:
                    total.add(self.finish_swap(session, key))
                stored = None  # read again, in the write transaction
            except DeletedMeanwhile as gone:
                waited = gone.args[0]
                stored = None
        raise StageLost(f"conversations kept being swapped in or deleted by other loads: {waited}")

    def staged(self, session: GraphSession, conv: Conversation, row: Row, stored: Stored) -> LoadSummary:
        """A conversation of more than `stage_messages` messages: staged in steps, then swapped in (the protocol of
        chatetl.graph.staging); one that fails is recorded as failed and its stage discarded."""
        key = stage_key(conv.key, row["state_hash"])
        pending = self.stages.pop(conv.key, [])  # its stages a stopped load left: this one's goes on, the others go
        quiet = nothing_to_write([row], stored)
        if quiet is not None:
            return quiet.add(self.discard(session, pending))
        total = self.discard(session, [k for k in pending if k != key])
        row.setdefault("props", conversation_props(conv))
        old = stored.get(conv.key)
        wins = old is None or decide(row, old) in WRITTEN  # decided again under the lock, at the swap
        plan: StagePlan | None = None
        try:
            for _ in range(STAGE_ATTEMPTS):
                if wins:
                    plan = plan or stage_plan(conv, row["state_hash"])
                    total.add(self._stage(session, plan))
                try:
                    over, swapped = _write(session, swap, conv, row, key, self.deep, wins, self.swap_step)
                    break
                except NotStaged:  # it wins after all, or its stage was discarded by another load meanwhile
                    wins = True
                except DeletedMeanwhile:  # its Conversation was retracted while the swap waited: written anew
                    wins = True
                except SwapInProgress as busy:  # another state of it is being swapped in: that one first
                    total.add(self.finish_swap(session, busy.args[0][0]))
            else:
                raise StageLost(f"its stage was discarded {STAGE_ATTEMPTS} times by other loads before its swap")
            total.add(swapped)
            if not over:
                total.add(self.finish_swap(session, key))
        except Exception as exc:
            if not conversation_fault(exc):
                raise
            self.failed.add(conv.key)
            return total.add(failure(conv, exc)).add(self.discard(session, [key]))
        if plan is not None:
            total.conversations_staged += 1
            if not (swapped.conversations_created or swapped.conversations_updated):  # a newer state won meanwhile
                total.add(self.discard(session, [key]))
        return total.add(self.clean(session))

    def _stage(self, session: GraphSession, plan: StagePlan) -> LoadSummary:
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
                    raise StageLost(f"its stage was discarded {discarded} times by other loads while it was staged") from None
                continue
            total.add(summary)
            if done >= size:
                return total

    def finish_swap(self, session: GraphSession, key: str) -> LoadSummary:
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

    def discard(self, session: GraphSession, keys: list[str]) -> LoadSummary:
        """Stages dropped (their StagedMessages are garbage from then on); never one whose swap has begun."""
        if not keys:
            return LoadSummary()
        dropped, summary = _write(session, _counted, drop_stages, keys)
        self.garbage = self.garbage or dropped > 0
        return summary

    def clean(self, session: GraphSession) -> LoadSummary:
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
