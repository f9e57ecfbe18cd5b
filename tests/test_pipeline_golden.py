"""Every stage, run on fixed inputs, writes what today's code wrote (tests/golden/pipeline/, written by
tests/pipeline_golden.py, which says what the steps are, what is recorded and what is left out):
the tables row by row with their schema and layout, the bucket's keys and bytes, the graph node by
node with its schema, each stage's report, and the command line's output and files."""

from __future__ import annotations

import difflib
import json
import os
from typing import Any

import pipeline_golden as golden
import pytest

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None


def _shown(value: Any) -> list[str]:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False).splitlines()


def _diff(expected: Any, actual: Any, lines: int = 60) -> str:
    out = list(difflib.unified_diff(_shown(expected), _shown(actual), "golden", "now", n=2, lineterm=""))
    return "\n".join(out[:lines]) + (f"\n... ({len(out) - lines} more lines)" if len(out) > lines else "")


@pytest.fixture(scope="module")
def recorded(neo4j_driver, tmp_path_factory):
    """The steps and the commands run once for this module's tests, with chatetl's default settings."""
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("CHATETL_") and not n.startswith(("CHATETL_S3_", "CHATETL_NEO4J_"))]:
            mp.delenv(name)
        recorder = golden.record_all(tmp_path_factory.mktemp("pipeline"), neo4j_driver, DB, golden.click_invoke)
    return golden.golden_lines(recorder)


def test_the_inputs_are_the_recorded_ones():
    """The generators and the zips they make give the bytes the golden files were made from (if not, every
    other difference below follows from this one: a generator changed, or zlib deflates otherwise)."""
    assert golden.input_digests(golden.step_uploads()) == golden.read_golden("inputs")


def test_each_step_reports_writes_and_loads_what_it_did(recorded):
    expected = golden.read_golden("steps")
    actual = recorded["steps"]
    assert [s["step"] for s in actual] == [s["step"] for s in expected]
    for want, got in zip(expected, actual, strict=True):
        for part in ("reports", "bucket", "graph", "schema"):
            assert got[part] == want[part], f"step {want['step']}, {part}:\n{_diff(want[part], got[part])}"


def _table_pairs(expected_steps: list, actual_steps: list, expected_cli: list, actual_cli: list) -> list[tuple[str, str, str]]:
    """(where, golden table digest, current one) of every Parquet file the steps and the commands wrote."""
    pairs = []
    for want, got in zip(expected_steps, actual_steps, strict=True):
        for key, entry in want["bucket"]["put"].items():
            if "table" in entry:
                pairs.append((f"{want['step']}: {key}", entry["table"], got["bucket"]["put"].get(key, {}).get("table")))
    for want, got in zip(expected_cli, actual_cli, strict=True):
        for path, entry in want["files"].items():
            if "table" in entry:
                pairs.append((f"{want['run']}: {path}", entry["table"], got["files"].get(path, {}).get("table")))
    return pairs


def _first_difference(want: dict, got: dict | None) -> str:
    if got is None:
        return "not written"
    for part in ("schema", "layout"):
        if want.get(part) != got.get(part):
            return f"{part}:\n{_diff(want.get(part), got.get(part))}"
    if len(want["rows"]) != len(got["rows"]):
        return f"{len(got['rows'])} rows, not {len(want['rows'])}"
    for i, (a, b) in enumerate(zip(want["rows"], got["rows"], strict=True)):
        if a != b:
            return f"row {i}:\n{_diff(a, b)}"
    return "the same"


def _by_digest(tables: list[dict]) -> dict[str, dict]:
    return {t["table"]: {k: v for k, v in t.items() if k != "table"} for t in tables}


def test_every_table_holds_the_recorded_rows(recorded):
    """Every Parquet file (the bucket's normalized/ and rag/ ones, the command line's parts): schema,
    layout and every row, in order."""
    tables = _by_digest(golden.read_golden("tables"))
    pairs = _table_pairs(golden.read_golden("steps"), recorded["steps"], golden.read_golden("cli"), recorded["cli"])
    assert pairs and all(want in tables for _, want, _ in pairs)
    now = _by_digest(recorded["tables"])
    wrong = [(where, _first_difference(tables[want], now.get(got))) for where, want, got in pairs if want != got]
    assert not wrong, "\n\n".join(f"{where}: {why}" for where, why in wrong[:5]) + f"\n({len(wrong)} files differ)"
    assert now == tables


def test_the_state_and_quarantine_files_hold_the_recorded_text(recorded):
    """The JSON under state/, quarantine/ and rag/ (ledgers, upload indexes, retractions, error listings)."""
    texts = {t["text"]: t["value"] for t in golden.read_golden("texts")}
    now = {t["text"]: t["value"] for t in recorded["texts"]}
    missing = sorted(set(texts) - set(now))
    extra = [now[d] for d in sorted(set(now) - set(texts))]
    shown = "\n".join(difflib.unified_diff([texts[d] for d in missing], extra, "golden", "now", lineterm=""))
    assert not missing and not extra, shown[:6000]


def test_the_command_line_writes_what_it_did(recorded):
    """`chatetl normalize` (one and two processes) and `chatetl export` (each format, and all with everything
    in): exit code, stdout, stderr, every file's bytes (the two-process tables: their rows)."""
    expected = golden.read_golden("cli")
    actual = recorded["cli"]
    assert [r["args"] for r in actual] == [r["args"] for r in expected]
    for want, got in zip(expected, actual, strict=True):
        assert got == want, f"{want['run']}:\n{_diff(want, got)}"
