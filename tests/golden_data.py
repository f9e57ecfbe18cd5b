"""What the golden files are made of: canonical JSON forms of tables and models, and JSON lines in xz.

A golden file records what today's code writes, as data a person can read (`xzcat`) and a test can
compare: a table as its schema and its rows (row order included, values as JSON: times in ISO 8601,
bytes in base64), a model as its class, the fields it marks as set and its values in their order.
A folder the values name (a test's tmp_path) is replaced by a label, so the files hold no run's paths.
The writers of the files that need Neo4j run on the test services (`test_services`).
"""

from __future__ import annotations

import base64
import enum
import hashlib
import json
import lzma
import os
import subprocess
import sys
from datetime import date, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def dumps(value: Any) -> str:
    """One canonical JSON text: keys sorted, non-ASCII kept (JSON lines split on "\\n" only)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=True)


def write_jsonl_xz(path: Path, lines: list[Any]) -> None:
    text = "".join(dumps(line) + "\n" for line in lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lzma.compress(text.encode("utf-8", "surrogatepass"), preset=9 | lzma.PRESET_EXTREME))


def read_jsonl_xz(path: Path) -> list[Any]:
    # (not splitlines: texts hold U+2028 and U+0085, which JSON leaves unescaped)
    return [json.loads(line) for line in lzma.decompress(path.read_bytes()).decode("utf-8", "surrogatepass").split("\n")[:-1]]


class Canon:
    """Canonical, JSON-able values, the path of a folder (`root`) replaced by `label`."""

    def __init__(self, root: Path | str | None = None, label: str = "<tmp>") -> None:
        self.root = str(root) if root is not None else None
        self.label = label

    def text(self, value: str) -> str:
        return value.replace(self.root, self.label) if self.root else value

    def value(self, value: Any) -> Any:
        """A Parquet or graph value as JSON: times in ISO 8601, bytes in base64."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bool) or value is None or isinstance(value, int | float):
            return value
        if isinstance(value, datetime | date):
            return value.isoformat()
        if isinstance(value, bytes):
            return {"base64": base64.b64encode(value).decode()}
        if isinstance(value, dict):
            return {str(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        if hasattr(value, "iso_format"):  # neo4j.time types
            return value.iso_format()
        raise TypeError(f"no canonical form for {type(value).__name__}: {value!r}")

    def tagged(self, value: Any) -> Any:
        """A Python value with its type kept (what `==` on models compares): a model as its class, the
        fields it marks as set and its attributes in their order; datetimes, enums, tuples tagged."""
        if hasattr(value, "model_fields_set"):
            return {"model": type(value).__name__, "fields_set": sorted(value.model_fields_set),
                    "values": [[k, self.tagged(v)] for k, v in value.__dict__.items()]}
        if isinstance(value, enum.Enum):
            return {"enum": f"{type(value).__name__}.{value.name}"}
        if isinstance(value, datetime):
            return {"datetime": value.isoformat(), "tz": repr(value.tzinfo)}
        if isinstance(value, bytes):
            return {"bytes": base64.b64encode(value).decode()}
        if isinstance(value, dict):
            return {"dict": [[self.tagged(k), self.tagged(v)] for k, v in value.items()]}
        if isinstance(value, tuple):
            return {"tuple": [self.tagged(v) for v in value]}
        if isinstance(value, list):
            return [self.tagged(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bool) or value is None or isinstance(value, int | float):
            return value
        raise TypeError(f"no tagged form for {type(value).__name__}: {value!r}")


def table_rows(table: Any, canon: Canon) -> dict[str, Any]:
    """A pyarrow Table as what `Table.equals` compares: its schema (names, types, nullability) and its rows in order."""
    return {"schema": table.schema.to_string(show_field_metadata=False, show_schema_metadata=False),
            "rows": [canon.value(row) for row in table.to_pylist()]}


def parquet_record(path: Path, canon: Canon) -> dict[str, Any]:
    """A Parquet file's schema (with field metadata), layout (row groups, codecs, encodings, key-value
    metadata but the Arrow schema, which the schema says) and rows."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    meta = pf.metadata
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    columns = []
    if groups:
        g = groups[0]
        columns = [[g.column(c).path_in_schema, g.column(c).compression, sorted(g.column(c).encodings)] for c in range(g.num_columns)]
    layout = {
        "created_by": meta.created_by,
        "format_version": meta.format_version,
        "row_groups": [g.num_rows for g in groups],
        "columns": columns,
        "metadata": {k.decode(): canon.text(v.decode("utf-8", "replace")) for k, v in (meta.metadata or {}).items()
                     if k != b"ARROW:schema"},
    }
    table = pf.read()
    return {"schema": table.schema.to_string(show_field_metadata=True, show_schema_metadata=False),
            "layout": layout, "rows": [canon.value(row) for row in table.to_pylist()]}


def content_digest(record: Any) -> str:
    return sha256(dumps(record).encode("utf-8", "surrogatepass"))


def test_services() -> tuple[Any, str | None]:
    """A driver of the test services' Neo4j and its database, in the suite's environment (tests/conftest.py:
    the test ports unless exported, deploy/local.env, chatetl's defaults), the services started if they do
    not answer."""
    import conftest  # noqa: F401  (sets the suite's environment)
    from neo4j import GraphDatabase

    for name in [n for n in os.environ if n.startswith("CHATETL_") and not n.startswith(("CHATETL_S3_", "CHATETL_NEO4J_"))]:
        del os.environ[name]
    services = [sys.executable, str(REPO / "deploy" / "local_services.py")]
    if subprocess.run([*services, "status"], capture_output=True).returncode != 0:
        subprocess.run([*services, "up"], check=True)
    driver = GraphDatabase.driver(os.environ["NEO4J_URI"], auth=(os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"]))
    return driver, os.environ.get("NEO4J_DATABASE") or None
