"""The Cypher of a conversation's load: its state checked and decided, its messages, links and trace written.

Every statement takes its rows as parameters (lists sent once per statement, no per-row round trip) and
matches by the indexed keys of chatetl.graph.schema. Who runs them, and in which transaction, is
chatetl.graph.upsert's; what a state does to the node is chatetl.graph.decide's rule, which the
upsert's CASE repeats under the node's lock.
"""

from __future__ import annotations

from chatetl.graph.properties import MESSAGE_PROPERTIES

# read-only: what decides whether a state wins (no lock: a state that must be written is decided again under the
# lock), in STATE_FIELDS order (chatetl.graph.decide.StoredState), all in one record (a record per key costs the
# driver more than the list)
CHECK_CONVERSATIONS = """
UNWIND $keys AS key
MATCH (c:Conversation {key: key})
RETURN collect([key, c.state_version, c.state_hash, c.state_source, c.state_file, coalesce(c.deep, false),
                coalesce(c.sources, []), coalesce(c.source_files, []), c.swapping_in]) AS states
"""
STATE_FIELDS = ("key", "version", "hash", "state_source", "state_file", "deep", "sources", "source_files", "swapping_in")

# conversations that had no node: CREATEd (a concurrent load creating the same one fails on the key constraint,
# and the batch is written again the safe way)
CREATE_CONVERSATIONS = """
UNWIND $rows AS row
CREATE (c:Conversation)
SET c = row.props, c.sources = row.sources, c.source_files = row.source_files, c.state_version = row.state_version,
    c.state_hash = row.state_hash, c.state_source = row.arrived_via, c.state_file = row.source_file, c.deep = row.deep
WITH c, row
OPTIONAL MATCH (d:Document {key: row.key})
FOREACH (_ IN CASE WHEN d IS NULL THEN [] ELSE [1] END | CREATE (c)-[:HAS_DOCUMENT]->(d))
"""

# a node that exists: locked, its state read again and decided under the lock, by chatetl.graph.decide's rule
# (tests/graph/test_decide.py holds the CASE to it); 'deleted': the node was retracted while the lock was waited
# for; 'busy': a state is being swapped in, in steps (chatetl.graph.staging): the transaction is rolled back and
# that swap finished first
UPSERT_CONVERSATIONS = """
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

# the NEXT and REPLIES_TO links among messages just CREATEd and collected as `ms`, given as pairs of list
# indexes (no lookups): a created conversation's messages and a staged step's
LINKS_AMONG_CREATED = """CALL (ms) {
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

# a created conversation's messages are new (its node did not exist, and messages are only ever written with their
# conversation, in its transaction): CREATEd with their HAS_MESSAGE, NEXT and REPLIES_TO in one statement, no
# lookups but the conversation's. Parameters are columns (one list per property, `$lo[ci]..$lo[ci+1]-1` the messages
# of conversation ci); links are pairs of list indexes.
CREATE_MESSAGES = """
UNWIND range(0, size($conversations) - 1) AS ci
MATCH (c:Conversation {key: $conversations[ci]})
UNWIND range($lo[ci], $lo[ci + 1] - 1) AS i
CREATE (c)-[:HAS_MESSAGE]->(m:Message {""" + ", ".join(f"{name}: $p_{name}[i]" for name in MESSAGE_PROPERTIES) + """})
WITH collect(m) AS ms
""" + LINKS_AMONG_CREATED

# a replaced state's old messages, deleted with their links before its messages are CREATEd like a new
# conversation's (nothing else links to a Message but its TraceSteps, which the batch writes again or removes);
# `removed` counts the ones the new state no longer has
DROP_MESSAGES = """
UNWIND $convs AS conv
MATCH (:Conversation {key: conv.key})-[:HAS_MESSAGE]->(m:Message)
WITH m, NOT m.key IN conv.message_keys AS stale
DETACH DELETE m
RETURN count(CASE WHEN stale THEN 1 END) AS removed
"""

# the safe way (a conversation another load created meanwhile, or nodes that outlived their conversation):
# messages MERGEd, the ones the state no longer has deleted, then its links made to match (below)
UPSERT_MESSAGES = """
UNWIND $convs AS conv
MATCH (c:Conversation {key: conv.key})
UNWIND conv.messages AS props
MERGE (m:Message {key: props.key})
SET m = props
MERGE (c)-[:HAS_MESSAGE]->(m)
"""

REMOVE_STALE_MESSAGES = """
UNWIND $convs AS conv
MATCH (:Conversation {key: conv.key})-[:HAS_MESSAGE]->(m:Message)
WHERE NOT m.key IN conv.message_keys
DETACH DELETE m
RETURN count(m) AS removed
"""

# a replaced state's messages: links it no longer asks for deleted, the ones it asks for merged (`next` / `parent`:
# the keys a message should link to, '' for none)
REMOVE_STALE_LINKS = """
UNWIND $links AS link
MATCH (m:Message {key: link.key})-[r:NEXT|REPLIES_TO]->(o:Message)
WHERE (type(r) = 'NEXT' AND o.key <> link.next) OR (type(r) = 'REPLIES_TO' AND o.key <> link.parent)
DELETE r
"""

LINK_MESSAGES = """
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

# deep mode: a conversation's DecisionTrace and TraceSteps removed, or written over (steps linked once all are written)
REMOVE_TRACES = """
UNWIND $keys AS key
MATCH (:Conversation {key: key})-[:HAS_TRACE]->(t:DecisionTrace)
CALL (t) {
  MATCH (t)-[:HAS_STEP]->(s:TraceStep)
  DETACH DELETE s
}
DETACH DELETE t
RETURN count(*) AS removed
"""

WRITE_TRACES = """
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

REMOVE_STEPS = """
UNWIND $keys AS key
MATCH (s:TraceStep {key: key})
DETACH DELETE s
"""

LINK_TRACE_STEPS = """
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
LINK_TRACE_STEPS_TO_STAGED = LINK_TRACE_STEPS.replace(
    "MATCH (m:Message {key: s.message_key})",
    "MATCH (m:StagedMessage {key: s.message_key}) USING INDEX m:StagedMessage(key) WHERE m.stage = $token")
