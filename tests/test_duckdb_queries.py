"""The DuckDB queries of docs/tables.md (its section "Querying the normalized tables with DuckDB"), run as written against the demo's output:
the built-in samples uploaded and normalized into a local-folder bucket, as `make demo` does, plus
a generated year of ChatGPT history uploaded twice (a second export of the same account), so the
months differ and every chat arrives in two uploads. Each result is checked against the same
figure computed here with pyarrow."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
import pytest

from chatetl.ingest.index import partition_of
from chatetl.ingest.partition import ingest_partition
from chatetl.layout import RAW_PREFIX
from chatetl.samples import ChatGPTBuilder, sample_uploads
from chatetl.storage import LocalObjectStore

TABLES_DOC = Path(__file__).resolve().parent.parent / "docs" / "tables.md"


def year_of_history() -> bytes:
    """Twelve ChatGPT chats, one a month through 2025, of 2 to 13 turns, answered by two models; each at
    02:00 UTC on the 1st, still the month before west of UTC (so months in another time zone would differ)."""
    convs = []
    for month in range(1, 13):
        b = ChatGPTBuilder(f"history-{month}", f"Month {month:02d} question", datetime(2025, month, 1, 2, tzinfo=UTC).timestamp())
        for turn in range(1 + month):
            b.text("user" if turn % 2 == 0 else "assistant", f"turn {turn}",
                   **({"metadata": {"model_slug": "o3-mini" if month % 3 == 0 else "gpt-4o"}} if turn % 2 else {}))
        convs.append(b.build())
    return json.dumps(convs).encode()


def doc_queries() -> list[str]:
    text = TABLES_DOC.read_text()
    section = text[text.index("## Querying the normalized tables with DuckDB") :]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
    return re.findall(r"```sql\n(.*?)```", section, re.DOTALL)


@pytest.fixture(scope="module")
def bucket(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("demo") / "bucket"
    store = LocalObjectStore(root)
    uploads = {**sample_uploads(), "raw/history/conversations.json": year_of_history(), "raw/history-again/conversations.json": year_of_history()}
    for key, data in uploads.items():
        store.put_bytes(key, data)
    days: dict[str, list] = {}
    for info in store.list(RAW_PREFIX):
        days.setdefault(partition_of(info), []).append(info)
    for day, infos in days.items():
        result = ingest_partition(store, day, infos)
        assert result.errors == [] and result.conversations > 0
    return root


@pytest.fixture
def run(bucket, monkeypatch):
    """Runs the doc's statements in order, from the bucket's folder, in a session set to another
    time zone first (the doc's SET must be what makes months UTC)."""
    monkeypatch.chdir(bucket)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'Pacific/Pago_Pago'")
    setup, *queries = doc_queries()
    con.execute(setup)
    yield lambda i: con.execute(queries[i]).fetchall()
    con.close()


def _table(bucket: Path, name: str, columns: list[str]) -> list[dict]:
    return ds.dataset(bucket / "normalized" / name, format="parquet", partitioning="hive").to_table(columns=columns).to_pylist()


def test_the_doc_has_the_three_queries_and_the_time_zone():
    setup, *queries = doc_queries()
    assert setup.strip() == "SET TimeZone = 'UTC';" and len(queries) == 3


def test_messages_per_month_per_platform(bucket, run):
    rows = run(0)
    seen = set()
    for m in _table(bucket, "messages", ["conversation_key", "message_id", "platform", "seq", "created_at"]):
        if m["seq"] is not None and m["created_at"] is not None:
            seen.add((m["created_at"].astimezone(UTC).strftime("%Y-%m"), m["platform"], m["conversation_key"], m["message_id"]))
    expected = Counter((month, platform) for month, platform, _, _ in seen)
    assert rows == sorted((month, platform, n) for (month, platform), n in expected.items())
    assert len({p for _, p, _ in rows}) >= 3 and len({m for m, _, _ in rows}) >= 13
    # a chat that came in twice (the ChatGPT export and a single-chat Markdown of it) is counted once
    raw = sum(1 for m in _table(bucket, "messages", ["seq", "created_at"]) if m["seq"] is not None and m["created_at"] is not None)
    assert sum(n for *_, n in rows) < raw


def test_the_longest_conversations_in_their_newest_state(bucket, run):
    rows = run(1)
    states = _table(bucket, "conversations", ["conversation_key", "title", "platform", "created_at", "updated_at", "message_count", "upload_key"])
    states.sort(key=lambda c: c["upload_key"] or "")
    states.sort(key=lambda c: ((c["updated_at"] or c["created_at"]) is not None, (c["updated_at"] or c["created_at"] or 0) and
                               (c["updated_at"] or c["created_at"]).timestamp(), c["message_count"]), reverse=True)  # stable
    newest: dict[str, dict] = {}
    for c in states:
        newest.setdefault(c["conversation_key"], c)  # the first is the newest state
    ordered = sorted(newest.values(), key=lambda c: (-c["message_count"], c["title"] is None, c["title"] or "", c["platform"]))
    expected = [(c["title"], c["platform"], c["created_at"].astimezone(UTC).date() if c["created_at"] else None, c["message_count"])
                for c in ordered[:10]]
    assert rows == expected
    assert len(rows) == 10 and rows[0] == ("Month 12 question", "chatgpt", datetime(2025, 12, 1).date(), 13)
    assert len(newest) < len(states) and len({r[0] for r in rows}) == 10  # every chat once, though uploaded twice


def test_the_models_used(bucket, run):
    rows = run(2)
    messages: Counter = Counter()
    conversations: dict[str, set] = {}
    seen = set()
    for m in _table(bucket, "messages", ["conversation_key", "message_id", "role", "model"]):
        if m["role"] == "assistant" and m["model"] is not None and (m["model"], m["conversation_key"], m["message_id"]) not in seen:
            seen.add((m["model"], m["conversation_key"], m["message_id"]))
            messages[m["model"]] += 1
            conversations.setdefault(m["model"], set()).add(m["conversation_key"])
    expected = sorted(((model, n, len(conversations[model])) for model, n in messages.items()), key=lambda r: (-r[1], r[0]))
    assert rows == expected and {"gpt-4o", "o3-mini"} <= {r[0] for r in rows}
