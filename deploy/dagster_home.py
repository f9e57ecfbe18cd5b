#!/usr/bin/env python3
"""Prepare a local DAGSTER_HOME: its dagster.yaml from deploy/dagster.local.yaml.

    python deploy/dagster_home.py [DAGSTER_HOME]     (default: $DAGSTER_HOME or .dagster_home)

The copy is refreshed while it is ours (empty, or starting with the file's first line); a
dagster.yaml someone wrote by hand is left alone, with a note.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "deploy" / "dagster.local.yaml"


def ensure(home: str | Path) -> Path:
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    wanted = TEMPLATE.read_text()
    current = target.read_text() if target.exists() else ""
    if current == wanted:
        return target
    if current.strip() and not current.startswith(wanted.splitlines()[0]):
        print(f"{target}: written by hand, left as it is (the project's settings: {TEMPLATE})", file=sys.stderr)
        return target
    target.write_text(wanted)
    return target


if __name__ == "__main__":
    print(ensure(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("DAGSTER_HOME") or REPO / ".dagster_home"))
