"""What the Dagster UI shows renders as written: it reads descriptions as Markdown, where a
placeholder in angle brackets outside a code span is taken for an HTML tag and disappears; and the
normalized asset's definition shows the Parquet contract as table schemas."""

from __future__ import annotations

import re

from assets.definitions import defs

_TAG = re.compile(r"<[A-Za-z/!?][^>]*>")
_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)


def _eaten(text: str | None) -> list[str]:
    return _TAG.findall(_CODE.sub("", text or ""))


def test_no_description_has_a_placeholder_the_ui_would_eat():
    graph = defs.resolve_asset_graph()
    described = {f"asset {k.to_user_string()}": graph.get(k).description for k in graph.get_all_asset_keys()}
    for check in graph.asset_check_keys:
        described[f"check {check.name}"] = graph.get_check_spec(check).description
    for job in defs.resolve_all_job_defs():
        described[f"job {job.name}"] = job.description
    for sensor in defs.sensors or []:
        described[f"sensor {sensor.name}"] = getattr(sensor, "description", None)
    for schedule in defs.schedules or []:
        described[f"schedule {schedule.name}"] = getattr(schedule, "description", None)
    assert len(described) > 5
    assert {name: tags for name, text in described.items() if (tags := _eaten(text))} == {}


def test_the_normalized_asset_shows_the_parquet_contract_column_by_column():
    from dagster import AssetKey

    from chatetl.tables.schema import CONVERSATIONS_SCHEMA, MESSAGES_SCHEMA

    metadata = defs.resolve_asset_graph().get(AssetKey("normalized")).metadata
    for key, schema in (("conversations_columns", CONVERSATIONS_SCHEMA), ("messages_columns", MESSAGES_SCHEMA)):
        columns = metadata[key].schema.columns
        assert [(c.name, c.type, c.constraints.nullable) for c in columns] == [(f.name, str(f.type), f.nullable) for f in schema]
