"""What a load did: its counts (they add up over batches, uploads and days) and the conversations that failed."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from chatetl.model import Conversation
from chatetl.tally import Tally, capped, summed_by

log = logging.getLogger(__name__)

FAILURES_LISTED = 100  # a summary's `failures` keeps the first ones (its count of failures counts them all)


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


def failure_text(key: str, exc: BaseException, where: str = "") -> str:
    """One line on what the server (or the driver) refused: the key (a long one cut), `where`, the error's first line."""
    words = (str(exc).strip().splitlines() or [""])[0]
    key = key if len(key) <= 120 else f"{key[:120]}… ({len(key)} characters)"
    return f"{key}{where}: {type(exc).__name__}: {words}"[:500]


def failure(conv: Conversation, exc: BaseException) -> LoadSummary:
    """A conversation that could not be written, even alone: counted and described (key, file, the server's words)."""
    line = failure_text(conv.key, exc, f" ({conv.source_file or 'no file'}, {len(conv.messages)} messages)")
    log.warning("graph load: %s", line)
    return LoadSummary(conversations_failed=1, failures=[line])
