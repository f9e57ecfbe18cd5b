"""Review fixes in the orchestration layer, against the real S3 server and Neo4j:

- the same bytes uploaded again on a later day start a run of that day (Dagster skips a run
  key it has already seen, so `key@etag` alone would leave the move to the next day's schedule);
- upload text (a title, an exported Markdown file) shown in the documents and exports
  previews is inert, never rendered as Markdown or HTML;
- a Neo4j resource whose connectivity check fails closes the driver it opened.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from dagster import DagsterInstance, DagsterRunStatus, build_sensor_context, instance_for_test

from assets.common import md_fenced
from assets.sensors import upload_sensor
from chatetl.ingest.index import partition_of
from chatetl.samples import chatgpt_export

pytestmark = pytest.mark.integration


def _tick(definitions, cursor, instance):
    context = build_sensor_context(
        cursor=cursor, definitions=definitions, resources={"object_store": definitions.resources["object_store"]},
        sensor_name="upload_sensor", instance=instance,
    )
    data = upload_sensor.evaluate_tick(context)
    return data.run_requests or []


def test_same_bytes_uploaded_again_on_a_later_day_get_a_run_key_of_their_own(definitions):
    from dagster._core.test_utils import create_run_for_test

    store = definitions.resources["object_store"].store
    info = store.put_bytes("raw/carol/chatgpt-export.zip", chatgpt_export())
    today = partition_of(info)
    yesterday = (info.last_modified - timedelta(days=1)).date().isoformat()
    plain = f"{info.key}@{info.etag}"
    with instance_for_test() as instance:
        # nothing ran yet: the documented key@etag
        assert [r.run_key for r in _tick(definitions, None, instance)] == [plain]
        # that key already ran for today: the same key (Dagster skips it: the same version)
        create_run_for_test(instance, job_name="ingest_job", status=DagsterRunStatus.SUCCESS, tags={"dagster/partition": today, "dagster/sensor_name": "upload_sensor", "dagster/run_key": plain})
        assert [r.run_key for r in _tick(definitions, None, instance)] == [plain]
    with instance_for_test() as instance:
        # the same bytes ran yesterday: today's upload of them is another version, with its own key
        create_run_for_test(instance, job_name="ingest_job", status=DagsterRunStatus.SUCCESS, tags={"dagster/partition": yesterday, "dagster/sensor_name": "upload_sensor", "dagster/run_key": plain})
        requests = _tick(definitions, None, instance)
        assert [(r.run_key, r.partition_key) for r in requests] == [(f"{plain}@date={today}", today)]


HOSTILE = {
    "schema": "chat-export/1", "platform": "grok", "title": "<img src=x onerror=alert(1)> [x](javascript:y) Tides", "chat_id": "grok-7",
    "exported_at": "2026-01-02T08:00:00Z",
    "messages": [
        {"role": "user", "text": "<script>alert(2)</script> ![pixel](https://tracker.example/p.png) ````"},
        {"role": "assistant", "text": "High tide is at 14:05."},
    ],
}


def test_previews_show_upload_text_inert(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    info = store.put_bytes("raw/mallory/grok.json", json.dumps(HOSTILE).encode())
    run = definitions.resolve_job_def("ingest_job").execute_in_process(
        partition_key=partition_of(info), instance=DagsterInstance.ephemeral()
    )
    assert run.success
    mats = {e.materialization.asset_key.to_user_string(): e.materialization.metadata for e in run.get_asset_materialization_events()}

    docs = mats["documents"]
    heading, _, body = docs["preview"].value.partition("\n\n")
    assert "<img" not in heading and "&lt;img src=x onerror=alert(1)&gt;" in heading and "\\[x\\]" in heading
    assert body.startswith("`````text\n") and body.endswith("\n`````")  # longer than the 4 backticks inside

    preview = mats["exports"]["preview"].value
    first, *_, last = preview.splitlines()
    assert first == "`````text" and last == "`````"  # the exported Markdown, as source
    inner = preview[len(first) + 1 : -len(last) - 1]
    assert "![pixel](https://tracker.example/p.png)" in inner and "`````" not in inner


def test_md_fenced_cuts_and_outgrows_inner_fences():
    assert md_fenced("plain") == "```text\nplain\n```"
    assert md_fenced("a ``` b") == "````text\na ``` b\n````"
    assert md_fenced("x" * 10, limit=4) == "```text\nxxxx\n…\n```"


def test_neo4j_resource_closes_the_driver_when_the_server_does_not_answer(monkeypatch):
    import neo4j

    from resources.neo4j import Neo4jResource

    opened = []
    real = neo4j.GraphDatabase.driver

    def spy(*args, **kwargs):
        driver = real(*args, **kwargs)
        opened.append(driver)
        return driver

    monkeypatch.setattr(neo4j.GraphDatabase, "driver", spy)
    resource = Neo4jResource(uri="bolt://127.0.0.1:1", password="not-a-real-password")
    with pytest.raises(Exception):
        resource.setup_for_execution(None)  # type: ignore[arg-type]
    assert len(opened) == 1 and opened[0]._closed and resource._driver is None
