"""Data checks on one daily partition's normalized tables, against their contract. Plain
functions (the Dagster asset checks call them; the graph's check is chatetl.graph.checks).

- columns: every normalized file has exactly the contract's columns and types;
- unique message ids: no message id twice within one conversation state;
- gapless seq: per conversation state, the non-null `seq` values are exactly
  0..n-1, only on the active branch, and n is the row's `message_count`.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from chatetl.storage import ObjectStore
from chatetl.tables import (
    CONVERSATIONS_SCHEMA,
    MESSAGES_SCHEMA,
    download_table,
    partition_table_pairs,
    read_rows,
)
from chatetl.tally import Tally, all_passed, capped, summed_by

MAX_PROBLEMS = 50
SCHEMAS = {"conversations": CONVERSATIONS_SCHEMA, "messages": MESSAGES_SCHEMA}
OPTIONAL_COLUMNS = frozenset({"state_hash"})  # columns that files written before they were added lack (read without them)


@dataclass
class CheckReport(Tally):
    """A check's outcome; reports add up (`add`): passed only if every part passed, at most MAX_PROBLEMS examples."""

    passed: bool = summed_by(all_passed, default=True)
    problems: list[str] = summed_by(capped(MAX_PROBLEMS), default_factory=list)
    problem_count: int = 0
    counts: Counter = field(default_factory=Counter)

    def fail(self, problem: str) -> None:
        self.passed = False
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)


def schema_problems(actual: pa.Schema, expected: pa.Schema) -> list[str]:
    """How a file's schema differs from the contract (names, order-independent, and types)."""
    have = {f.name: f.type for f in actual}
    want = {f.name: f.type for f in expected}
    problems = [f"missing column {name!r}" for name in want if name not in have and name not in OPTIONAL_COLUMNS]
    problems += [f"unexpected column {name!r}" for name in have if name not in want]
    problems += [f"column {name!r} is {have[name]}, the contract says {t}" for name, t in want.items() if name in have and not have[name].equals(t)]
    return problems


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

    convs = list(read_rows(conv_path, ["conversation_key", "message_count", "total_messages"]))
    messages = read_rows(msg_path, ["conversation_key", "message_id", "seq", "on_active_branch"])
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
    for conv_key, msg_key in partition_table_pairs(store, day):
        label = conv_key.rsplit("/", 1)[-1].removesuffix(".parquet")
        if store.head(msg_key) is None:
            reports["columns"].fail(f"{label}: messages file {msg_key} is missing")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            found = check_normalized_pair(download_table(store, conv_key, tmp), download_table(store, msg_key, tmp), f"{day}/{label}")
        for name, report in found.items():
            reports[name].add(report)
    return reports


