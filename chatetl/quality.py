"""Data checks on one daily partition: the normalized tables against their contract, and
the graph against the tables. Plain functions (the Dagster asset checks call them).

- columns: every normalized file has exactly the contract's columns and types;
- unique message ids: no message id twice within one conversation state;
- gapless seq: per conversation state, the non-null `seq` values are exactly
  0..n-1, only on the active branch, and n is the row's `message_count`;
- graph: every conversation of the partition is in Neo4j with all its messages, unless
  a newer state (or an equal-version state from another source) legitimately replaced it
  under the newest-wins rule.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from chatetl import pipeline
from chatetl.normalize import CONVERSATIONS_SCHEMA, MESSAGES_SCHEMA, state_version
from chatetl.storage import ObjectStore

MAX_PROBLEMS = 50
SCHEMAS = {"conversations": CONVERSATIONS_SCHEMA, "messages": MESSAGES_SCHEMA}


@dataclass
class CheckReport:
    passed: bool = True
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    counts: Counter = field(default_factory=Counter)

    def fail(self, problem: str) -> None:
        self.passed = False
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)

    def merge(self, other: "CheckReport") -> None:
        self.passed = self.passed and other.passed
        self.problem_count += other.problem_count
        self.problems += other.problems[: max(0, MAX_PROBLEMS - len(self.problems))]
        self.counts.update(other.counts)


def schema_problems(actual: pa.Schema, expected: pa.Schema) -> list[str]:
    """How a file's schema differs from the contract (names, order-independent, and types)."""
    have = {f.name: f.type for f in actual}
    want = {f.name: f.type for f in expected}
    problems = [f"missing column {name!r}" for name in want if name not in have]
    problems += [f"unexpected column {name!r}" for name in have if name not in want]
    problems += [f"column {name!r} is {have[name]}, the contract says {t}" for name, t in want.items() if name in have and not have[name].equals(t)]
    return problems


def _download(store: ObjectStore, key: str, folder: str) -> Path:
    return store.download(key, Path(folder, key.rsplit("/", 1)[-1] + f".{abs(hash(key))}"))


def _rows(path: Path, columns: list[str]) -> Iterator[dict[str, Any]]:
    for batch in pq.ParquetFile(path).iter_batches(batch_size=8192, columns=columns):
        yield from batch.to_pylist()


def check_normalized_pair(conv_path: Path, msg_path: Path, label: str) -> dict[str, CheckReport]:
    """The three table checks over one upload's pair of files (messages streamed)."""
    columns, unique, gapless = CheckReport(), CheckReport(), CheckReport()
    schema_ok = True
    for table, path in (("conversations", conv_path), ("messages", msg_path)):
        columns.counts["files"] += 1
        for problem in schema_problems(pq.read_schema(path), SCHEMAS[table]):
            columns.fail(f"{label} {table}: {problem}")
            schema_ok = False
    if not schema_ok:
        for report in (unique, gapless):
            report.fail(f"{label}: not checked, the files do not match the contract")
        return {"columns": columns, "unique": unique, "gapless": gapless}

    convs = list(_rows(conv_path, ["conversation_key", "message_count", "total_messages"]))
    messages = _rows(msg_path, ["conversation_key", "message_id", "seq", "on_active_branch"])
    for conv in convs:
        key, total = conv["conversation_key"], conv["total_messages"] or 0
        block = []
        for _ in range(total):
            row = next(messages, None)
            if row is None:
                break
            block.append(row)
        unique.counts["conversations"] += 1
        gapless.counts["conversations"] += 1
        unique.counts["messages"] += len(block)
        if len(block) != total or any(r["conversation_key"] != key for r in block):
            unique.fail(f"{label} {key}: its {total} messages are not the next {total} rows of the messages table")
            gapless.fail(f"{label} {key}: messages out of place, seq not checked")
            continue
        dups = sorted(mid for mid, n in Counter(r["message_id"] for r in block).items() if n > 1)
        if dups:
            unique.fail(f"{label} {key}: duplicate message ids {dups[:5]}")
        seqs = sorted(r["seq"] for r in block if r["seq"] is not None)
        if seqs != list(range(len(seqs))):
            missing = sorted(set(range(len(seqs))) - set(seqs))[:5]
            gapless.fail(f"{label} {key}: seq is not 0..{len(seqs) - 1} (missing {missing}, got {seqs[:10]}...)")
        elif len(seqs) != (conv["message_count"] or 0):
            gapless.fail(f"{label} {key}: {len(seqs)} seq values but message_count is {conv['message_count']}")
        if any(r["seq"] is not None and not r["on_active_branch"] for r in block):
            gapless.fail(f"{label} {key}: seq set on a message off the active branch")
        gapless.counts["visible_turns"] += len(seqs)
    extra = sum(1 for _ in messages)
    if extra:
        unique.fail(f"{label}: {extra} message rows belong to no conversation row")
    return {"columns": columns, "unique": unique, "gapless": gapless}


def check_normalized_partition(store: ObjectStore, day: str) -> dict[str, CheckReport]:
    """Run the table checks over every upload's files in a day: columns, unique, gapless."""
    reports = {"columns": CheckReport(), "unique": CheckReport(), "gapless": CheckReport()}
    for conv_key, msg_key in pipeline.partition_table_pairs(store, day):
        label = conv_key.rsplit("/", 1)[-1].removesuffix(".parquet")
        if store.head(msg_key) is None:
            reports["columns"].fail(f"{label}: messages file {msg_key} is missing")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            found = check_normalized_pair(_download(store, conv_key, tmp), _download(store, msg_key, tmp), f"{day}/{label}")
        for name, report in found.items():
            reports[name].merge(report)
    return reports


# ---------------------------------------------------------------- graph vs tables


@dataclass
class ConversationState:
    key: str
    version: float
    messages: int
    source: str


def partition_states(store: ObjectStore, day: str) -> dict[str, ConversationState]:
    """The newest state of each conversation in a day's normalized tables (later files win ties,
    as they do when the graph loads them in the same order)."""
    states: dict[str, ConversationState] = {}
    for conv_key, msg_key in pipeline.partition_table_pairs(store, day):
        with tempfile.TemporaryDirectory() as tmp:
            conv_path, msg_path = _download(store, conv_key, tmp), _download(store, msg_key, tmp)
            messages = _rows(msg_path, ["conversation_key", "created_at"])
            for conv in _rows(conv_path, ["conversation_key", "source", "created_at", "updated_at", "total_messages"]):
                total = conv["total_messages"] or 0
                times = [next(messages, {"created_at": None})["created_at"] for _ in range(total)]
                version = state_version(
                    SimpleNamespace(
                        updated_at=conv["updated_at"],
                        created_at=conv["created_at"],
                        messages=[SimpleNamespace(created_at=t) for t in times if t is not None],
                    )
                )
                old = states.get(conv["conversation_key"])
                if old is None or version >= old.version:
                    states[conv["conversation_key"]] = ConversationState(conv["conversation_key"], version, total, conv["source"])
    return states


_GRAPH_STATES = """
UNWIND $keys AS key
OPTIONAL MATCH (c:Conversation {key: key})
RETURN key, c IS NOT NULL AS present, c.state_version AS version, c.state_source AS state_source,
       CASE WHEN c IS NULL THEN 0 ELSE COUNT { (c)-[:HAS_MESSAGE]->(:Message) } END AS messages
"""


def check_graph_partition(store: ObjectStore, driver: Any, day: str, database: str | None = None, batch: int = 2000) -> CheckReport:
    """Every conversation of the partition is in the graph with its messages, or was replaced
    by a newer state (newest wins); never missing, never an older state, never short."""
    report = CheckReport()
    states = partition_states(store, day)
    keys = sorted(states)
    report.counts["conversations"] = len(keys)
    report.counts["messages"] = sum(s.messages for s in states.values())
    for i in range(0, len(keys), batch):
        records, _, _ = driver.execute_query(_GRAPH_STATES, {"keys": keys[i : i + batch]}, database_=database)
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
