"""The "What chatetl guarantees" table of docs/guarantees.md names, on each line, the tests that back it: each
named file exists and each named test is defined in it (so a renamed or deleted test shows here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _rows() -> list[str]:
    text = (ROOT / "docs" / "guarantees.md").read_text()
    section = text.split("# What chatetl guarantees", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith(("| when", "| ---"))]


def test_every_guarantee_names_tests_that_exist():
    rows = _rows()
    assert len(rows) >= 10
    for row in rows:
        refs = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", row)
        assert refs, f"a guarantee without a test: {row[:80]}"
        for path, name in refs:
            source = (ROOT / path).read_text()
            if name:
                assert re.search(rf"^def {name}\(", source, re.MULTILINE), f"{path}::{name} is not defined"
