"""Metadata for the UI: text from uploads (keys, titles, errors) made inert in Markdown, lists and
tables; this run's counts beside the totals; the Parquet contract as Dagster table schemas."""


from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
from dagster import MetadataValue, TableColumn, TableColumnConstraints, TableSchema


def md_text(value: Any) -> str:
    """Text from an upload (a key, a title, an error) made inert in Markdown metadata: HTML,
    table pipes, code-span backticks and link brackets escaped, one line."""
    text = "" if value is None else str(value)
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("\\", "\\\\"), ("|", "\\|"), ("`", "\\`"),
                 ("[", "\\["), ("]", "\\]"), ("\r", " "), ("\n", " ")):
        text = text.replace(a, b)
    return text


def md_cell(value: Any, limit: int = 120) -> str:
    """A value safe inside a Markdown table cell, cut to `limit` characters."""
    text = "" if value is None else str(value)
    return md_text(text[:limit] + ("…" if len(text) > limit else ""))


def md_fenced(text: str, limit: int = 1500) -> str:
    """Text from an upload shown verbatim (never rendered) in Markdown metadata: cut to
    `limit` characters, in a code fence longer than any run of backticks inside it."""
    body = text[:limit] + ("\n…" if len(text) > limit else "")
    longest = run = 0
    for ch in body:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}text\n{body}\n{ticks}"


def md_list(items: list[Any], limit: int = 100) -> MetadataValue:
    shown = items[:limit]
    more = f"\n- ... and {len(items) - limit} more" if len(items) > limit else ""
    return MetadataValue.md("\n".join(f"- {md_text(i)}" for i in shown) + more if shown else "_none_")


def key_list(keys: list[str], limit: int = 50) -> MetadataValue:
    return md_list(keys, limit)


def md_table(headers: Iterable[str], rows: Iterable[Iterable[Any]]) -> MetadataValue:
    headers = list(headers)
    body = [" | ".join(md_cell(v) for v in row) for row in rows]
    if not body:
        return MetadataValue.md("_none_")
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)] + [f"| {row} |" for row in body]
    return MetadataValue.md("\n".join(lines))


def counts_table(counts: Mapping[str, Any], what: str = "what") -> MetadataValue:
    return md_table([what, "count"], ((f"{k}", v) for k, v in sorted(counts.items())))


def run_and_totals(this_run: Mapping[str, int], totals: Mapping[str, int | None]) -> dict[str, Any]:
    """Counts that say whose they are: `<what>_this_run` is what this run wrote (a rerun that changes
    nothing writes 0), `<what>_total` what the graph or bucket holds now, whatever run wrote it (None:
    not known to this step, left out); and both side by side in one table."""
    metadata: dict[str, Any] = {f"{what}_this_run": int(n) for what, n in this_run.items()}
    metadata |= {f"{what}_total": int(n) for what, n in totals.items() if n is not None}
    whats = list(dict.fromkeys([*this_run, *totals]))
    metadata["this_run_and_total"] = md_table(
        ["what", "this run", "total now"],
        ((what, this_run.get(what, "-"), "-" if totals.get(what) is None else totals[what]) for what in whats),
    )
    return metadata


def table_schema(schema: pa.Schema) -> TableSchema:
    """A Parquet contract's columns as Dagster shows a table: name, type, whether it may be null."""
    return TableSchema(columns=[TableColumn(f.name, str(f.type), constraints=TableColumnConstraints(nullable=f.nullable)) for f in schema])


def contract_metadata() -> dict[str, Any]:
    """The normalized tables' contract (chatetl.tables.schema), shown on the asset's definition."""
    from chatetl.tables.schema import CONVERSATIONS_SCHEMA, MESSAGES_SCHEMA

    return {
        "conversations_columns": MetadataValue.table_schema(table_schema(CONVERSATIONS_SCHEMA)),
        "messages_columns": MetadataValue.table_schema(table_schema(MESSAGES_SCHEMA)),
    }


