"""A conversation too big for one transaction: staged in bounded steps, then swapped in.

Neo4j holds a transaction's writes in memory until it commits (all transactions together
within `dbms.memory.transaction.total.max`, 70% of the heap by default). A conversation of
tens of thousands of messages written in one transaction can exhaust it (`MemoryPoolOutOfMemoryError`,
or a server too busy collecting garbage to read its socket), the driver retries for minutes, and as
a batch commits whole, nothing after it reaches the graph. So a conversation of more messages
than the load's `stage_messages` is written by this protocol, keyed by its state
(`LoadStage.key` = `{conversation key}@{state hash}`, chatetl.model.state_hash):

1. stage: in transactions of at most `stage_messages` messages, the state's messages are
   CREATEd as `StagedMessage` nodes (every Message property, plus `stage`: the stage's token)
   with their NEXT and REPLIES_TO (a link in the step of its later end, so both ends exist: by
   list index within the step, looked up by key into an earlier one). A `LoadStage` node
   {key, token, conversation_key, messages, staged} counts what is staged. Each step locks it,
   reads `staged` and writes the next messages from there, in the same transaction that
   advances the count: a step commits whole or not at all, so a rerun after a kill (or a second
   load staging the same state at once) goes on where the last committed step ended, and no
   message is staged twice; a step whose stage another load deleted while it waited for the lock
   reads nulls (StageDiscarded) and is run again, which makes the stage anew. Nothing staged is
   visible: a StagedMessage is not a Message and no Conversation links to it.
2. swap: one transaction decides again, under the Conversation's lock, whether the state wins
   (chatetl.graph.decide's rule, the upsert's CASE); if it does, it writes the
   Conversation's properties and trace and swaps the first `swap_messages` messages: the old
   state's are deleted (and any Message of its conversation id that no Conversation links to:
   nodes that outlived their conversation), then the staged ones become Messages with HAS_MESSAGE (label and link only:
   no message text is written again). A state that fits (old and new messages together) is
   swapped in that one transaction, so readers see the old state until it commits and the new
   one after. A bigger one goes on in transactions of `swap_messages` (its LoadStage's `phase`
   says where: retire, orphans, promote), and until the last commits its Conversation carries
   `swapping_in` (the stage key): the winner is written, its messages are part old, part new.
   Any load that meets a Conversation with `swapping_in` finishes that swap before it writes
   the conversation (it needs nothing but the graph), so a kill in the middle is finished by the
   rerun. A state that no longer wins (a newer one was written meanwhile) records its sources
   and its stage is discarded; a swap that finds its stage incomplete (discarded by another
   load meanwhile) is rolled back and the state staged again.
3. clean up: discarding a stage deletes its LoadStage node (never one whose swap has begun);
   its StagedMessages are garbage from then on, deleted in transactions of `stage_messages`
   nodes after the load that discarded it, and by every load when it starts.

What readers see: a Conversation without `swapping_in` has exactly its state's messages; a
Conversation with it is marked as being replaced. What a rerun sees: what was staged or
swapped so far, by label and key; it ends in the graph of a clean load
(tests/graph/test_big_conversations.py kills a load in each of its transactions in turn).

A step's memory on the server grows with its number of messages, not with the conversation's:
bench/graph_load.py (--big-messages) measures it beside the one-transaction write, by the
server's own estimate (bench/RESULTS.md).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from chatetl.graph.properties import MESSAGE_PROPERTIES, message_columns, message_links
from chatetl.graph.statements import LINKS_AMONG_CREATED
from chatetl.model import Conversation

if TYPE_CHECKING:
    from neo4j import ManagedTransaction

Run = Callable[..., list[Any]]
"""`run(cypher, **params) -> records`: one statement in the caller's transaction, its updates counted."""


def stage_key(conversation_key: str, state_hash: str) -> str:
    """The LoadStage key of one state of one conversation."""
    return f"{conversation_key}@{state_hash}"


# every stage in the graph (a load that stopped leaves its own): conversation key -> stage keys
_PENDING_STAGES = """
MATCH (s:LoadStage)
RETURN s.conversation_key AS conversation_key, collect(s.key) AS keys
"""

# a step starts by locking its stage (made on the first step): two steps of one stage never run at once
_LOCK_STAGE = """
MERGE (s:LoadStage {key: $key})
ON CREATE SET s.token = randomUUID(), s.conversation_key = $conversation_key, s.messages = $messages, s.staged = 0
SET s._lock = true
RETURN s.token AS token, s.staged AS staged, s.messages AS messages
"""

# a step's messages CREATEd with the links among them (pairs of list indexes, no lookups) and the links to messages of
# earlier steps (looked up by key, the index named: planned while the label holds no committed node, Neo4j may
# otherwise scan the step's own uncommitted nodes for every lookup)
_STAGE_MESSAGES = """
UNWIND range(0, size($p_key) - 1) AS i
CREATE (m:StagedMessage {stage: $token, """ + ", ".join(f"{name}: $p_{name}[i]" for name in MESSAGE_PROPERTIES) + """})
WITH collect(m) AS ms
""" + LINKS_AMONG_CREATED + """CALL (ms) {
  UNWIND $earlier AS link
  MATCH (o:StagedMessage {key: link.key}) USING INDEX o:StagedMessage(key)
  WHERE o.stage = $token
  WITH ms[link.here] AS here, o, link
  FOREACH (_ IN CASE WHEN link.kind = 'next' AND link.outgoing THEN [1] ELSE [] END | CREATE (here)-[:NEXT]->(o))
  FOREACH (_ IN CASE WHEN link.kind = 'next' AND NOT link.outgoing THEN [1] ELSE [] END | CREATE (o)-[:NEXT]->(here))
  FOREACH (_ IN CASE WHEN link.kind = 'reply' AND link.outgoing THEN [1] ELSE [] END | CREATE (here)-[:REPLIES_TO]->(o))
  FOREACH (_ IN CASE WHEN link.kind = 'reply' AND NOT link.outgoing THEN [1] ELSE [] END | CREATE (o)-[:REPLIES_TO]->(here))
}
"""

_ADVANCE_STAGE = """
MATCH (s:LoadStage {key: $key})
SET s.staged = $staged
REMOVE s._lock
"""

# the swap: the stage locked and read (complete or not) ...
_CHECK_STAGE = """
MATCH (s:LoadStage {key: $key})
SET s._lock = true
REMOVE s._lock
RETURN s.token AS token, s.staged AS staged, s.messages AS messages
"""

# ... begun in the transaction that decided the state wins: the Conversation marked, the stage in its first phase ...
_BEGIN_SWAP = """
MATCH (c:Conversation {key: $conversation_key})
MATCH (s:LoadStage {key: $key})
SET c.swapping_in = $key, s.phase = 'retire'
"""

# ... and each of its transactions locks the stage (one swap step at a time) and reads how far it is
_LOCK_SWAP = """
MATCH (s:LoadStage {key: $key})
SET s._lock = true
REMOVE s._lock
RETURN s.token AS token, s.phase AS phase, s.conversation_key AS conversation_key
"""

# phase `retire`: the old state's messages deleted with their links (`removed`: the ones the new state lacks)
_RETIRE_MESSAGES = """
MATCH (:Conversation {key: $conversation_key})-[:HAS_MESSAGE]->(m:Message)
WITH m LIMIT $limit
WITH m, EXISTS { MATCH (n:StagedMessage {key: m.key}) USING INDEX n:StagedMessage(key) WHERE n.stage = $token } AS kept
DETACH DELETE m
RETURN count(*) AS retired, count(CASE WHEN kept THEN null ELSE 1 END) AS removed
"""

# phase `orphans`: Messages of this conversation that no Conversation links to (nodes that outlived it: their keys
# would collide with the staged ones), found by the conversation id index (its old messages are gone by now)
_RETIRE_ORPHANS = """
MATCH (c:Conversation {key: $conversation_key})
MATCH (m:Message {conversation_id: c.conversation_id}) USING INDEX m:Message(conversation_id)
WHERE m.platform = c.platform AND NOT EXISTS { MATCH (:Conversation)-[:HAS_MESSAGE]->(m) }
WITH m LIMIT $limit
DETACH DELETE m
RETURN count(*) AS retired
"""

# phase `promote`: the staged messages become the conversation's
_PROMOTE_MESSAGES = """
MATCH (c:Conversation {key: $conversation_key})
MATCH (m:StagedMessage {stage: $token}) USING INDEX m:StagedMessage(stage)
WITH c, m LIMIT $limit
REMOVE m:StagedMessage, m.stage
SET m:Message
CREATE (c)-[:HAS_MESSAGE]->(m)
RETURN count(m) AS promoted
"""

_SET_PHASE = """
MATCH (s:LoadStage {key: $key})
SET s.phase = $phase
"""

_CLEAR_MARK = """
MATCH (c:Conversation {key: $conversation_key})
WHERE c.swapping_in = $key
REMOVE c.swapping_in
"""

_END_SWAP = """
MATCH (c:Conversation {key: $conversation_key})
WHERE c.swapping_in = $key
REMOVE c.swapping_in
WITH count(c) AS ended
OPTIONAL MATCH (s:LoadStage {key: $key})
DELETE s
"""

# stages not being swapped in (a swap, once begun, is finished by whichever load meets it next; one whose
# Conversation no longer names it, e.g. retracted meanwhile, is not)
_DROP_STAGES = """
UNWIND $keys AS key
MATCH (s:LoadStage {key: key})
WHERE s.phase IS NULL OR NOT EXISTS { MATCH (c:Conversation {key: s.conversation_key}) WHERE c.swapping_in = s.key }
DELETE s
RETURN count(s) AS dropped
"""

_GARBAGE = """
RETURN EXISTS { MATCH (m:StagedMessage) WHERE NOT EXISTS { MATCH (:LoadStage {token: m.stage}) } } AS abandoned
"""

_DELETE_ABANDONED = """
MATCH (m:StagedMessage)
WHERE NOT EXISTS { MATCH (:LoadStage {token: m.stage}) }
WITH m LIMIT $limit
DETACH DELETE m
RETURN count(*) AS deleted
"""


@dataclass
class StagePlan:
    """One state's messages in the order they are staged (one per message id: the last, as a MERGE would keep), as
    columns in MESSAGE_PROPERTIES order, and its links (positions) ordered by the position of their later end."""

    key: str
    conversation_key: str
    columns: list[list[Any]]
    links: list[tuple[int, int, int, str]] = field(default_factory=list)  # (later end's position, from, to, kind)

    @property
    def size(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def links_in(self, lo: int, hi: int) -> list[tuple[int, int, int, str]]:
        return self.links[bisect.bisect_left(self.links, (lo,)):bisect.bisect_left(self.links, (hi,))]


def stage_plan(conv: Conversation, state_hash: str) -> StagePlan:
    """What staging `conv`'s state writes (computed once per load, sliced per step)."""
    last = {m.message_id: m for m in conv.messages}
    order = list(last.values())
    position = {m.message_id: i for i, m in enumerate(order)}
    columns = message_columns(conv, order)
    links: list[tuple[int, int, int, str]] = []
    for mid, (nxt, parent) in message_links(conv).items():
        me = position[mid]
        for kind, other in (("next", nxt), ("reply", parent)):
            there = position.get(other) if other else None
            if there is not None:
                links.append((max(me, there), me, there, kind))
    links.sort()
    return StagePlan(stage_key(conv.key, state_hash), conv.key, columns, links)


class StageDiscarded(Exception):
    """The stage a step waited to lock was deleted meanwhile (discarded by another load, chatetl.graph.writer): the
    step's MERGE matched the node before the deleting transaction committed, and reads nothing but nulls once it has
    the lock. The step writes nothing (its transaction is rolled back); a new step makes the stage again, staged from
    its first message."""


def pending_stages(tx: ManagedTransaction) -> dict[str, list[str]]:
    """conversation key -> the keys of its stages in the graph (read-only)."""
    return {r["conversation_key"]: list(r["keys"]) for r in tx.run(_PENDING_STAGES)}


def stage_step(run: Run, plan: StagePlan, step: int) -> tuple[int, int]:
    """One step, in the caller's transaction: the next `step` messages staged after the ones already staged (read
    under the stage's lock) and their links; returns (messages staged now in all, the plan's size). StageDiscarded
    where the stage was deleted while the step waited for its lock."""
    [rec] = run(_LOCK_STAGE, key=plan.key, conversation_key=plan.conversation_key, messages=plan.size)
    if rec["token"] is None:
        raise StageDiscarded(plan.key)
    token, lo = rec["token"], min(rec["staged"], plan.size)
    hi = min(lo + step, plan.size)
    if hi > lo:
        within: dict[str, tuple[list[int], list[int]]] = {"next": ([], []), "reply": ([], [])}
        earlier: list[dict[str, Any]] = []  # a link to a message of an earlier step: `here` is the end in this one
        for _, a, b, kind in plan.links_in(lo, hi):
            if a >= lo and b >= lo:
                within[kind][0].append(a - lo)
                within[kind][1].append(b - lo)
            else:
                here, there = (a, b) if a >= lo else (b, a)
                earlier.append({"kind": kind, "here": here - lo, "key": plan.columns[0][there], "outgoing": here == a})
        run(_STAGE_MESSAGES, token=token, next_from=within["next"][0], next_to=within["next"][1], reply_from=within["reply"][0],
            reply_to=within["reply"][1], earlier=earlier,
            **{f"p_{name}": col[lo:hi] for name, col in zip(MESSAGE_PROPERTIES, plan.columns)})
    run(_ADVANCE_STAGE, key=plan.key, staged=hi)
    return hi, plan.size


def complete_stage(run: Run, key: str) -> str | None:
    """The token of the stage `key` when all its messages are staged (locked until the caller's transaction ends),
    else None (not there, deleted while this waited for its lock, or not complete)."""
    rows = run(_CHECK_STAGE, key=key)
    if not rows or rows[0]["token"] is None or rows[0]["staged"] < rows[0]["messages"]:
        return None
    return cast("str", rows[0]["token"])


def begin_swap(run: Run, conversation_key: str, key: str) -> None:
    """The swap begins, in the caller's transaction (the one that wrote the winning state on the Conversation): the
    Conversation is marked `swapping_in` until its messages are all the new state's."""
    run(_BEGIN_SWAP, conversation_key=conversation_key, key=key)


def swap_step(run: Run, key: str, limit: int) -> tuple[bool, int]:
    """The swap of stage `key` goes on, in the caller's transaction, for at most `limit` messages: delete the old
    state's, then its orphans (Messages of its id linked from no Conversation), then promote the staged ones; the last step removes the mark
    and the stage. Returns (whether the swap is over, old messages the new state does not have)."""
    rows = run(_LOCK_SWAP, key=key)
    if not rows or rows[0]["phase"] is None:  # over (another load finished it), or never begun: no mark may stay
        run(_CLEAR_MARK, conversation_key=conversation_of(key), key=key)
        return True, 0
    token, phase, conversation_key = rows[0]["token"], rows[0]["phase"], rows[0]["conversation_key"]
    left, removed = limit, 0
    if phase == "retire":
        [rec] = run(_RETIRE_MESSAGES, conversation_key=conversation_key, token=token, limit=left)
        left, removed = left - rec["retired"], rec["removed"]
        phase = "orphans" if left > 0 else phase
    if phase == "orphans" and left > 0:
        [rec] = run(_RETIRE_ORPHANS, conversation_key=conversation_key, limit=left)
        left -= rec["retired"]
        phase = "promote" if left > 0 else phase
    if phase == "promote" and left > 0:
        [rec] = run(_PROMOTE_MESSAGES, conversation_key=conversation_key, token=token, limit=left)
        if rec["promoted"] < left:
            run(_END_SWAP, conversation_key=conversation_key, key=key)
            return True, removed
    run(_SET_PHASE, key=key, phase=phase)
    return False, removed


def conversation_of(key: str) -> str:
    """The conversation key of a stage key."""
    return key.rsplit("@", 1)[0]


def drop_stages(run: Run, keys: list[str]) -> int:
    """Discard stages: their LoadStage nodes go (one small write); their StagedMessages are garbage from then on."""
    [rec] = run(_DROP_STAGES, keys=keys)
    return cast("int", rec["dropped"])


def has_garbage(tx: ManagedTransaction) -> bool:
    """Whether StagedMessage nodes of no stage (discarded) are in the graph (read-only)."""
    return bool(tx.run(_GARBAGE).single(strict=True)["abandoned"])


def delete_garbage(run: Run, limit: int) -> int:
    """One clean-up step in the caller's transaction: up to `limit` StagedMessages of no stage deleted."""
    [rec] = run(_DELETE_ABANDONED, limit=limit)
    return cast("int", rec["deleted"])
