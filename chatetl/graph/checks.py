"""The graph's data check on one daily partition: the graph against the partition's normalized tables.

Every conversation of the partition must be in Neo4j with all its messages, unless a newer
state (or one of the same version from another source) replaced it there under the
newest-wins rule: that is counted, not failed, since the graph holds one state per chat (the
newest of all partitions loaded), not every partition's. Of two states of one conversation in
the partition, the one model.state_order picks is checked, the one the graph keeps. A missing conversation, an older
state than the tables' and a message count that differs for the same state are failures.
A plain function over the object store and a driver; the Dagster asset check calls it
beside the table checks of chatetl.ingest.checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatetl.check_report import CheckReport
from chatetl.graph.connection import run_read
from chatetl.model import StateOrder, order_of
from chatetl.storage import ObjectStore
from chatetl.tables import ConversationState, iter_partition_files, partition_states, table_states

if TYPE_CHECKING:
    from neo4j import Driver

_GRAPH_STATES = """
UNWIND $keys AS key
OPTIONAL MATCH (c:Conversation {key: key})
RETURN key, c IS NOT NULL AS present, c.state_version AS version, c.state_source AS state_source,
       CASE WHEN c IS NULL THEN 0 ELSE COUNT { (c)-[:HAS_MESSAGE]->(:Message) } END AS messages
"""


def check_graph_partition(store: ObjectStore, driver: Driver, day: str, database: str | None = None, batch: int = 2000) -> CheckReport:
    """Every conversation of the partition is in the graph with its messages, or was replaced
    by a newer state (newest wins); never missing, never an older state, never short."""
    report = CheckReport()
    states = _partition_winners(store, day)
    keys = sorted(states)
    report.counts["conversations"] = len(keys)
    report.counts["messages"] = sum(s.messages for s in states.values())
    for i in range(0, len(keys), batch):
        records = run_read(driver, database, _GRAPH_STATES, keys=keys[i : i + batch])
        for rec in records:
            mine = states[rec["key"]]
            if not rec["present"]:
                report.counts["missing"] += 1
                report.fail(f"{mine.key}: not in the graph")
                continue
            version = rec["version"] if rec["version"] is not None else float("-inf")
            if version > mine.version + 1e-6:
                report.counts["replaced_by_newer_state"] += 1
            elif version < mine.version - 1e-6:
                report.counts["older_state_in_graph"] += 1
                report.fail(f"{mine.key}: the graph holds an older state ({version}) than this partition's ({mine.version})")
            elif rec["messages"] == mine.messages:
                report.counts["matched"] += 1
                report.counts["messages_matched"] += mine.messages
            elif rec["state_source"] != mine.source:
                report.counts["replaced_by_equal_state_from_other_source"] += 1
            else:
                report.counts["message_count_mismatch"] += 1
                report.fail(f"{mine.key}: {rec['messages']} messages in the graph, {mine.messages} in the tables")
    return report


def _partition_winners(store: ObjectStore, day: str) -> dict[str, ConversationState]:
    """The state of each conversation of the partition that model.state_order picks (the same state twice: the
    first). A partition with a table written before the `state_hash` column is ordered by its versions alone
    (chatetl.tables.partition_states)."""
    winners: dict[str, tuple[StateOrder, ConversationState]] = {}
    for _uid, c_path, m_path in iter_partition_files(store, day):
        states = table_states(c_path, m_path)
        if states is None:
            return partition_states(store, day)
        for s in states:
            key = s["conversation_key"]
            order = order_of(s["state_version"], s["source"], s["state_hash"])
            if key not in winners or order > winners[key][0]:
                winners[key] = (order, ConversationState(key, s["state_version"], s["total_messages"] or 0, s["source"]))
    return {key: state for key, (_, state) in winners.items()}
