"""Retracting conversations from Neo4j: a conversation no upload holds any more leaves the graph whole.

What goes, per conversation key (chatetl.graph's model): its Messages with their NEXT and
REPLIES_TO, its DecisionTrace and TraceSteps (deep mode), its Document with the Document's
Chunks (and their NEXT), the stages a big load left of it (chatetl.graph.staging: its LoadStage
nodes, by `conversation_key`, and their StagedMessages, by token: a load killed while staging or
swapping it in, whose rerun no longer names the conversation, would otherwise leave them for ever),
and the Conversation node with every relationship still on it. Nodes are
deleted in bounded write transactions (`RETRACT_BATCH` nodes at most each, DETACH DELETE), so a
conversation of any size is retracted without exhausting the server's transaction memory, and a
retraction that is cut short and run again finishes the job (every statement matches only what
is left). Cypher with parameters only.

When another upload still holds the conversation, the caller loads that upload's state after the
retraction (chatetl.graph.load: with no node left, it is written as the winner). The keepsakes of
uploads that left go with them (chatetl.graph.keepsakes.retract_keepsakes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from chatetl.graph.connection import quiet, write_session
from chatetl.graph.keepsakes import retract_keepsakes
from chatetl.graph.load import load_conversations
from chatetl.graph.summary import LoadSummary
from chatetl.model import newest
from chatetl.retractions import (
    holder_states,
    holders,
    mark_applied,
    pending,
    retracted_keys,
)
from chatetl.storage import ObjectStore
from chatetl.tally import Tally

if TYPE_CHECKING:
    from neo4j import Driver, ManagedTransaction

RETRACT_BATCH = 5000  # nodes deleted per write transaction
KEYS_PER_STATEMENT = 500

# each deletes at most $limit nodes of the conversations in $keys, and says how many it deleted
_DELETE_MESSAGES = """
UNWIND $keys AS key
MATCH (:Conversation {key: key})-[:HAS_MESSAGE]->(m:Message)
WITH m LIMIT $limit
DETACH DELETE m
RETURN count(*) AS deleted
"""

_DELETE_TRACE_STEPS = """
UNWIND $keys AS key
MATCH (:Conversation {key: key})-[:HAS_TRACE]->(:DecisionTrace)-[:HAS_STEP]->(s:TraceStep)
WITH s LIMIT $limit
DETACH DELETE s
RETURN count(*) AS deleted
"""

_DELETE_TRACES = """
UNWIND $keys AS key
MATCH (:Conversation {key: key})-[:HAS_TRACE]->(t:DecisionTrace)
WITH t LIMIT $limit
DETACH DELETE t
RETURN count(*) AS deleted
"""

_DELETE_CHUNKS = """
UNWIND $keys AS key
MATCH (:Document {key: key})-[:HAS_CHUNK]->(c:Chunk)
WITH c LIMIT $limit
DETACH DELETE c
RETURN count(*) AS deleted
"""

_DELETE_DOCUMENTS = """
UNWIND $keys AS key
MATCH (d:Document {key: key})
WITH d LIMIT $limit
DETACH DELETE d
RETURN count(*) AS deleted
"""

_DELETE_STAGED_MESSAGES = """
UNWIND $keys AS key
MATCH (s:LoadStage {conversation_key: key})
MATCH (m:StagedMessage {stage: s.token}) USING INDEX m:StagedMessage(stage)
WITH m LIMIT $limit
DETACH DELETE m
RETURN count(*) AS deleted
"""

_DELETE_STAGES = """
UNWIND $keys AS key
MATCH (s:LoadStage {conversation_key: key})
WITH s LIMIT $limit
DETACH DELETE s
RETURN count(*) AS deleted
"""

_DELETE_CONVERSATIONS = """
UNWIND $keys AS key
MATCH (c:Conversation {key: key})
WITH c LIMIT $limit
DETACH DELETE c
RETURN count(*) AS deleted
"""

# in this order: what hangs below a node goes before the node that finds it
_STEPS = (
    ("messages", _DELETE_MESSAGES),
    ("trace_steps", _DELETE_TRACE_STEPS),
    ("traces", _DELETE_TRACES),
    ("chunks", _DELETE_CHUNKS),
    ("documents", _DELETE_DOCUMENTS),
    ("staged_messages", _DELETE_STAGED_MESSAGES),
    ("stages", _DELETE_STAGES),
    ("conversations", _DELETE_CONVERSATIONS),
)


@dataclass
class RetractSummary(Tally):
    """Nodes deleted by a retraction (their relationships went with them)."""

    conversations: int = 0
    messages: int = 0
    trace_steps: int = 0
    traces: int = 0
    documents: int = 0
    chunks: int = 0
    staged_messages: int = 0  # of stages a big load left (chatetl.graph.staging)
    stages: int = 0
    transactions: int = 0


def _deleted(tx: ManagedTransaction, cypher: str, keys: list[str], limit: int) -> int:
    """One bounded deleting step of `cypher` over `keys`: how many nodes it deleted."""
    record = tx.run(cypher, quiet({"keys": keys, "limit": limit})).single()
    return cast("int", record["deleted"]) if record else 0


def retract_conversations(driver: Driver, keys: Iterable[str], database: str | None = None, batch: int = RETRACT_BATCH) -> RetractSummary:
    """Delete these conversations and everything of theirs from the graph (keys it does not hold are no-ops)."""
    summary = RetractSummary()
    ordered = sorted(set(keys))
    with write_session(driver, database) as session:
        for lo in range(0, len(ordered), KEYS_PER_STATEMENT):
            part = ordered[lo:lo + KEYS_PER_STATEMENT]
            for name, cypher in _STEPS:
                while True:
                    deleted = session.execute_write(_deleted, cypher, part, batch)
                    summary.transactions += 1
                    setattr(summary, name, getattr(summary, name) + deleted)
                    if deleted < batch:
                        break
    return summary


def apply_graph_retractions(store: ObjectStore, driver: Driver, day: str, database: str | None = None,
                            deep: bool = False) -> tuple[RetractSummary, LoadSummary]:
    """The day's retractions the graph has not applied (chatetl.retractions): each conversation leaves the graph,
    and where another upload still holds it, the newest of the states they hold is loaded as the winner. The
    keepsake nodes follow the keepsake tables in the bucket, whatever the records say."""
    records = pending(store, day, "graph")
    keys = retracted_keys(records)
    summary, loaded = RetractSummary(), LoadSummary()
    if keys:
        found = holders(store, keys)
        summary = retract_conversations(driver, keys, database)
        winners = [w for states in holder_states(store, found).values() if (w := newest(states)) is not None]
        if winners:
            loaded = load_conversations(driver, sorted(winners, key=lambda c: c.key), database=database, deep=deep)
    retract_keepsakes(store, driver, database)  # (after the conversations: a project only they named goes with them)
    mark_applied(store, records, "graph")
    return summary, loaded
