"""Where a first load's server time goes: Neo4j's cost of writing Messages, one ingredient at a time.

    NEO4J_URI=bolt://127.0.0.1:7687 .venv/bin/python bench/message_write_cost.py [--conversations 2000] [--turns 50]

Generated data (never real chats). Each line writes the same messages (N conversations of M
messages, batches of --batch messages, one managed transaction each, on one session unless the line
says two, columnar parameters as chatetl's load sends them, built per batch) under a label of its own
(`BenchCost`, with its own key constraint and indexes, created and dropped here), adding one
ingredient at a time:

- the ceiling: `CREATE (:BenchCost {key})` under the key constraint (what bench/graph_load.py calls the ceiling);
- with the properties: the 16 of chatetl's Message (chatetl.graph.properties.MESSAGE_PROPERTIES), then the
  seed's 8 and the key (9), to see what each property costs the server;
- with the `conversation_id` index the seed's thread query starts from;
- with HAS_MESSAGE from the conversation's node (one index lookup per conversation);
- with NEXT and REPLIES_TO linked by list index in the same statement: what chatetl's `_CREATE_MESSAGES` does;
- the same on two sessions at once (batches shared out between two threads), as chatetl writes new conversations.

Each line prints messages per second, the median of --runs runs, and its ratio to the ceiling
measured in the same run. Nothing outside the `BenchCost`/`BenchCostConv` labels is touched.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "deploy"))

from local_env import ensure_local_env

from chatetl.graph.connection import QuietList, neo4j_settings, open_driver
from chatetl.graph.properties import MESSAGE_PROPERTIES

SEED_PROPERTIES = ("key", "name", "role", "content", "created_at", "conversation_id", "has_tool_calls", "has_tool_results", "model_slug")
LABEL, CONV_LABEL = "BenchCost", "BenchCostConv"
TEXT = "lorem ipsum dolor sit amet " * 8


def columns(conversations: int, turns: int) -> dict[str, list[Any]]:
    """Every Message property as a column, values shaped like the generated chats of bench/graph_load.py."""
    cols: dict[str, list[Any]] = {name: [] for name in MESSAGE_PROPERTIES}
    for i in range(conversations):
        cid = f"bench-{i:06d}"
        for n in range(turns):
            mid = f"{cid}-m{n}"
            text = f"Message {n} of conversation {i}: {TEXT}"
            values = {
                "key": f"bench:{cid}:{mid}", "message_id": mid, "name": f"msg-{mid[:12]}", "role": "user" if n % 2 == 0 else "assistant",
                "kind": "turn", "content": text, "content_truncated": False, "content_length": len(text),
                "created_at": f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}+00:00", "conversation_id": cid, "platform": "bench",
                "has_tool_calls": False, "has_tool_results": False, "model_slug": None if n % 2 == 0 else "gpt-4o", "seq": n,
                "on_active_branch": True,
            }
            for name in MESSAGE_PROPERTIES:
                cols[name].append(values[name])
    return cols


def statement(props: tuple[str, ...], conversation: bool, links: bool) -> str:
    body = ", ".join(f"{p}: $p_{p}[i]" for p in props)
    if not conversation:
        return f"UNWIND range(0, size($p_key) - 1) AS i CREATE (m:{LABEL} {{{body}}})"
    query = (f"UNWIND range(0, size($conversations) - 1) AS ci MATCH (c:{CONV_LABEL} {{key: $conversations[ci]}}) "
             f"UNWIND range($lo[ci], $lo[ci + 1] - 1) AS i CREATE (c)-[:HAS_MESSAGE]->(m:{LABEL} {{{body}}})")
    if links:
        query += """
WITH collect(m) AS ms
CALL (ms) { UNWIND range(0, size($next_from) - 1) AS j WITH ms[$next_from[j]] AS a, ms[$next_to[j]] AS b CREATE (a)-[:NEXT]->(b) }
CALL (ms) { UNWIND range(0, size($next_from) - 1) AS j WITH ms[$next_to[j]] AS a, ms[$next_from[j]] AS b CREATE (a)-[:REPLIES_TO]->(b) }
"""
    return query


def run_line(driver: Any, database: str | None, cols: dict[str, list[Any]], turns: int, batch: int, props: tuple[str, ...],
             conversation: bool, links: bool, sessions: int = 1) -> float:
    """Seconds to write every message the line's way, its batches shared out between `sessions` sessions."""
    query = statement(props, conversation, links)
    total = len(cols["key"])
    per = max(1, batch // turns) * turns
    starts = list(range(0, total, per))
    failures: list[BaseException] = []

    def write(part: list[int]) -> None:
        try:
            with driver.session(database=database) as session:
                for lo in part:
                    session.execute_write(lambda tx, p: tx.run(query, p).consume(), parameters(lo, min(total, lo + per)))
        except BaseException as exc:  # noqa: BLE001 - a session that failed makes the line fail, never a rate too good
            failures.append(exc)

    def parameters(lo: int, hi: int) -> dict[str, Any]:
        params: dict[str, Any] = {f"p_{p}": QuietList(cols[p][lo:hi]) for p in props}
        if conversation:
            count = (hi - lo) // turns
            params["conversations"] = QuietList([f"conv-{(lo // turns) + c}" for c in range(count)])
            params["lo"] = QuietList([c * turns for c in range(count + 1)])
            if links:
                params["next_from"] = QuietList([c * turns + n for c in range(count) for n in range(turns - 1)])
                params["next_to"] = QuietList([c * turns + n + 1 for c in range(count) for n in range(turns - 1)])
        return params

    threads = [threading.Thread(target=write, args=(starts[k::sessions],)) for k in range(sessions)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return time.perf_counter() - start


def delete_nodes(session: Any) -> None:
    """The benchmark's own nodes (both labels) and their relationships, gone."""
    for label in (LABEL, CONV_LABEL):
        session.run(f"MATCH (n:{label}) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF 10000 ROWS").consume()


def reset(driver: Any, database: str | None, conversations: int, index: bool) -> None:
    with driver.session(database=database) as session:
        delete_nodes(session)
        session.run(f"CREATE CONSTRAINT bench_cost_key IF NOT EXISTS FOR (m:{LABEL}) REQUIRE m.key IS UNIQUE").consume()
        session.run(f"CREATE CONSTRAINT bench_cost_conv_key IF NOT EXISTS FOR (c:{CONV_LABEL}) REQUIRE c.key IS UNIQUE").consume()
        if index:
            session.run(f"CREATE INDEX bench_cost_conversation_id IF NOT EXISTS FOR (m:{LABEL}) ON (m.conversation_id)").consume()
        else:
            session.run("DROP INDEX bench_cost_conversation_id IF EXISTS").consume()
        session.run("CALL db.awaitIndexes(300)").consume()
        session.run(f"UNWIND range(0, $n - 1) AS i CREATE (:{CONV_LABEL} {{key: 'conv-' + toString(i)}})", n=conversations).consume()


def drop(driver: Any, database: str | None) -> None:
    with driver.session(database=database) as session:
        delete_nodes(session)
        for name in ("bench_cost_key", "bench_cost_conv_key"):
            session.run(f"DROP CONSTRAINT {name} IF EXISTS").consume()
        session.run("DROP INDEX bench_cost_conversation_id IF EXISTS").consume()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    ensure_local_env()
    database = neo4j_settings()["database"]
    driver = open_driver()
    cols = columns(args.conversations, args.turns)
    total = len(cols["key"])
    all16 = tuple(MESSAGE_PROPERTIES)
    lines = [
        ("ceiling: CREATE {key} under the key constraint", ("key",), False, False, False, 1),
        ("+ the 16 Message properties", all16, False, False, False, 1),
        ("  the seed's 8 and the key instead (9)", SEED_PROPERTIES, False, False, False, 1),
        ("+ 16, the conversation_id index", all16, True, False, False, 1),
        ("  9, the conversation_id index", SEED_PROPERTIES, True, False, False, 1),
        ("+ 16, index, HAS_MESSAGE from the conversation", all16, True, True, False, 1),
        ("+ 16, index, HAS_MESSAGE, NEXT, REPLIES_TO", all16, True, True, True, 1),
        ("  9, index, HAS_MESSAGE, NEXT, REPLIES_TO", SEED_PROPERTIES, True, True, True, 1),
        ("  key only, index off, HAS_MESSAGE, NEXT, REPLIES_TO", ("key",), False, True, True, 1),
        ("16, index, HAS_MESSAGE, NEXT, REPLIES_TO, two sessions", all16, True, True, True, 2),
        ("  9, index, HAS_MESSAGE, NEXT, REPLIES_TO, two sessions", SEED_PROPERTIES, True, True, True, 2),
        ("ceiling on two sessions", ("key",), False, False, False, 2),
    ]
    print(f"{total:,} messages, batches of {args.batch:,}, median of {args.runs} runs", flush=True)
    ceiling = None
    try:
        for label, props, index, conversation, links, sessions in lines:
            times = []
            for _ in range(args.runs):
                reset(driver, database, args.conversations, index)
                times.append(run_line(driver, database, cols, args.turns, args.batch, props, conversation, links, sessions))
            rate = total / statistics.median(times)
            ceiling = ceiling or rate
            print(f"{label:<56} {rate:>10,.0f} msgs/s  ×ceiling {rate / ceiling:5.2f}", flush=True)
    finally:
        drop(driver, database)
        driver.close()


if __name__ == "__main__":
    main()
