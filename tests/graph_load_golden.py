"""The graph load's golden file: the graph and the summary after each step of tests/graph/test_load_equivalence.py.

    NEO4J_URI=bolt://127.0.0.1:17687 CHATETL_S3_ENDPOINT_URL=http://127.0.0.1:18333 \\
        .venv/bin/python tests/graph_load_golden.py      # (re)writes tests/graph/golden/load_steps.jsonl.xz

The steps load a generated corpus with every source format, a 10% resync, the older states replayed,
deep mode switched on, an unchanged rerun, a deep resync, deep mode off for some, and every
conversation again with 1 in 5 newer (chatetl.graph.load.load_conversations, batches of 100
messages, into the test services' Neo4j, which it empties first). After each, one line: the load's
summary (the counts the loader it replaced reported too) and the whole graph (every node with its
labels and properties, every relationship with its type, ends and properties: tests/graph_inputs.py's
`graph_dump`), the properties that moved off the Message node taken off Message nodes
(MOVED_OFF_MESSAGE). It replaced tests/graph/legacy_load.py, the loader before the bulk path (22-key
maps, links made by key lookups), run beside the new one at every test: when written, the recorded
steps equalled that loader's, less those properties, which it had on every Message.

Run it only when the graph a load writes changes on purpose; a faster loader must leave the file as
it is. The test's tmp_path (where the inputs are read from: source files) is `<tmp>` in the file.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "graph" / "golden" / "load_steps.jsonl.xz"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from golden_data import Canon, read_jsonl_xz, services_driver, write_jsonl_xz
from graph_inputs import generated, graph_dump, read, wipe, write_inputs

from chatetl.graph.load import load_conversations

# the properties that moved off the Message node (to NEXT / REPLIES_TO / HAS_MESSAGE and Conversation)
MOVED_OFF_MESSAGE = ("next_key", "parent_key", "conversation_key", "author_name", "branch_index", "visible")
# what only the loader that replaced legacy_load reported: left out of the recorded summaries
NEW_COUNTS = ("graph_updates", "largest_transaction_bytes", "conversations_failed", "conversations_staged")


def steps(folder: Path) -> list[tuple[str, list, bool]]:
    """(name, conversations, deep) of each load; the inputs of every source format are written into `folder`."""
    every_source = [c for p in write_inputs(folder).values() for c in read(p)]
    v0, v1, v2, v3 = (generated(60, 8, version=v) for v in range(4))
    newest = [v1[i] if i % 10 == 0 else c for i, c in enumerate(v0)]
    return [
        ("first load", v0 + every_source, False),
        ("10% resync: newer states replace older", [c for i, c in enumerate(v1) if i % 10 == 0], False),
        ("older states replayed: nothing changes", v0[::10], False),
        ("deep mode on", newest + every_source, True),
        ("unchanged rerun", newest + every_source, True),
        ("deep resync", [c for i, c in enumerate(v2) if i % 4 == 0], True),
        ("deep mode off for some", v2[::8], False),
        # batches that mix states written and states that write nothing (older, or the same)
        ("every conversation again, 1 in 5 newer", [v3[i] if i % 5 == 0 else c for i, c in enumerate(newest)] + every_source, True),
    ]


def message_props_moved(dump: dict) -> tuple[dict, set[str]]:
    """The dump with MOVED_OFF_MESSAGE taken off Message nodes (every other label keeps them), and
    the moved properties that were there."""
    nodes, seen = [], set()
    for text in dump["nodes"]:
        labels, props = json.loads(text)
        if labels == ["Message"]:
            seen |= set(props) & set(MOVED_OFF_MESSAGE)
            props = {k: v for k, v in props.items() if k not in MOVED_OFF_MESSAGE}
        nodes.append(json.dumps([labels, props], sort_keys=True, default=str))
    return {"nodes": sorted(nodes), "relationships": dump["relationships"]}, seen


def run(driver: Any, load: Callable[..., Any], loads: list[tuple[str, list, bool]], folder: Path,
        database: str | None = None) -> list[tuple[dict, dict]]:
    """(summary, graph dump) after each load, on an emptied graph; `folder`, where the inputs were read
    from, is `<tmp>` in the dumps."""
    canon = Canon(folder)
    wipe(driver, database)
    out = []
    for _name, convs, deep in loads:
        summary = load(driver, convs, database=database, batch_messages=100, deep=deep).to_dict()
        for own in NEW_COUNTS:
            summary.pop(own, None)
        dump = graph_dump(driver, database)
        out.append((summary, {part: sorted(canon.text(line) for line in lines) for part, lines in dump.items()}))
    return out


def stored() -> list[tuple[dict, dict]]:
    """(summary, graph dump less the moved properties) of each step, as recorded."""
    return [(line["summary"], {"nodes": line["nodes"], "relationships": line["relationships"]}) for line in read_jsonl_xz(GOLDEN)]


def main() -> None:
    driver, database = services_driver()
    try:
        with tempfile.TemporaryDirectory(prefix="chatetl-graph-golden-") as tmp:
            loads = steps(Path(tmp))
            recorded = run(driver, load_conversations, loads, Path(tmp), database)
    finally:
        driver.close()
    lines = []
    for (name, _, deep), (summary, full) in zip(loads, recorded, strict=True):
        dump, kept = message_props_moved(full)
        if kept:
            raise SystemExit(f"{name}: the Messages hold {sorted(kept)}, which moved off them")
        lines.append({"step": name, "deep": deep, "summary": summary, **dump})
    write_jsonl_xz(GOLDEN, lines)
    print(f"{len(lines)} steps; {GOLDEN.name} {GOLDEN.stat().st_size / 1000:.0f} KB")


if __name__ == "__main__":
    main()
