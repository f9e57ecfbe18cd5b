"""The documents and exports assets on the real S3 server and Neo4j: every upload of the partition
gets its Documents, chunks and files in every format, with honest metadata whose previews show
upload text (a title, an exported Markdown file) inert, never rendered as Markdown or HTML;
reruns write nothing; a renamed conversation's old files go, on S3 as on a folder."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta

import pytest
from dagster import DagsterInstance
from export_inputs import T0, chat
from upload_partitions import partition_for, run_day

from chatetl.exports.formats import PER_CONVERSATION
from chatetl.exports.partition import ExportPlan, write_partition_exports
from chatetl.graph.chunk_search import search_chunks
from chatetl.ingest.index import partition_of
from chatetl.samples import chatgpt_export

pytestmark = pytest.mark.integration


@pytest.fixture
def definitions(s3_definitions):
    return s3_definitions(CHATETL_EXPORT_ZIP_FORMATS="md,yaml,sharegpt-jsonl")


GROK = {
    "schema": "chat-export/1", "platform": "grok", "title": "<script>alert(1)</script> Tide tables", "chat_id": "grok-1",
    "exported_at": "2026-01-02T08:00:00Z",
    "messages": [
        {"role": "user", "text": "When is high tide in Brest?"},
        {"role": "assistant", "role_tag": "grok", "text": "High tide is at 14:05.\n\n```md\n# not a marker\n```",
         "sources": [{"title": "Tide service", "url": "https://example.org/tides"}]},
    ],
}


def test_assets_produce_documents_chunks_and_every_format_for_every_upload(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    store.put_bytes("raw/alice/chatgpt-export.zip", chatgpt_export())
    info = store.put_bytes("raw/bob/grok-tides.json", json.dumps(GROK).encode())
    day = partition_of(info)
    job = definitions.resolve_job_def("ingest_job")
    instance = DagsterInstance.ephemeral()
    # alice's partition, then bob's: the assets of the whole day (documents, exports) hold both after the second
    *_, run = runs = run_day(job, instance, store, day)
    assert [r.dagster_run.tags["dagster/partition"] for r in runs] == [f"{day}/alice", f"{day}/bob"]
    assert all(r.success for r in runs)
    mats = {e.materialization.asset_key.to_user_string(): e.materialization.metadata for e in run.get_asset_materialization_events()}

    docs = mats["documents"]
    # (each run writes to the graph what it brings: alice's three Documents, then bob's one)
    written = [{k: e.materialization.metadata[k].value for k in ("documents_this_run", "chunks_this_run")}
               for r in runs for e in r.get_asset_materialization_events() if e.materialization.asset_key.to_user_string() == "documents"]
    assert docs["documents"].value == 4 and sum(w["documents_this_run"] for w in written) == 4
    assert docs["chunks"].value == sum(w["chunks_this_run"] for w in written) >= 4
    # ... and the totals say what the graph holds now, after both
    assert (docs["documents_total"].value, docs["chunks_total"].value) == (4, docs["chunks"].value)
    assert len(list(store.list("rag/documents/"))) == 2 and len(list(store.list("rag/chunks/"))) == 2
    assert "ChatGPT: " in docs["preview"].value or "Grok: " in docs["preview"].value

    ex = mats["exports"]
    assert ex["conversations"].value == 4 and ex["files"].value == 4 * len(PER_CONVERSATION) + 2  # + training file, archive page
    assert ex["archive_conversations"].value == 4 and ex["archive"].value.endswith("exports/archive/index.html")
    for fmt in PER_CONVERSATION:
        assert len(list(store.list(f"exports/{fmt}/"))) == 4, fmt
    assert "```md" in ex["preview"].value and ex["training_records"].value == 4
    lines = store.get_bytes(f"exports/sharegpt-jsonl/sharegpt-{day}.jsonl").decode().splitlines()
    assert sorted(json.loads(x)["platform"] for x in lines) == ["chatgpt", "chatgpt", "chatgpt", "grok"]
    with zipfile.ZipFile(io.BytesIO(store.get_bytes(f"exports/zip/chats-{day}.zip"))) as zf:
        assert sorted({n.split("/")[0] for n in zf.namelist()}) == ["md", "sharegpt-jsonl", "yaml"]

    (grok_html,) = [o.key for o in store.list("exports/html/") if "/grok-" in o.key]
    page = store.get_bytes(grok_html).decode()
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; Tide tables" in page
    assert "<" not in grok_html and ">" not in grok_html  # the title is in the name, made safe

    hit = search_chunks(clean_graph, "Brest", database=None)
    assert [h["document_key"] for h in hit] == ["grok:grok-1"] and hit[0]["title"].startswith("Grok: ")

    etags = {o.key: o.etag for o in store.list("") if o.key.startswith(("exports/", "rag/"))}
    again = job.execute_in_process(partition_key=f"{day}/bob", instance=instance)
    assert again.success
    assert {o.key: o.etag for o in store.list("") if o.key.startswith(("exports/", "rag/"))} == etags
    mats2 = {e.materialization.asset_key.to_user_string(): e.materialization.metadata for e in again.get_asset_materialization_events()}
    assert mats2["exports"]["written_count"].value == 0


HOSTILE = {
    "schema": "chat-export/1", "platform": "grok", "title": "<img src=x onerror=alert(1)> [x](javascript:y) Tides", "chat_id": "grok-7",
    "exported_at": "2026-01-02T08:00:00Z",
    "messages": [
        {"role": "user", "text": "<script>alert(2)</script> ![pixel](https://tracker.example/p.png) ````"},
        {"role": "assistant", "text": "High tide is at 14:05."},
    ],
}


def test_previews_show_upload_text_inert(s3_definitions, clean_graph):
    definitions = s3_definitions()  # the default export settings, not this module's
    store = definitions.resources["object_store"].store
    info = store.put_bytes("raw/mallory/grok.json", json.dumps(HOSTILE).encode())
    run = definitions.resolve_job_def("ingest_job").execute_in_process(
        partition_key=partition_for(instance := DagsterInstance.ephemeral(), info), instance=instance
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


def test_newest_state_wins_on_s3(s3_store):
    plan = ExportPlan(formats=("chat-export-json", "yaml"), bundle_formats=())
    old = chat([("user", "hi"), ("assistant", "old")], title="First name")
    new = chat([("user", "hi"), ("assistant", "new")], title="Second name", updated=T0 + timedelta(days=3))
    write_partition_exports(s3_store, "2026-03-14", [("u1", iter([(old, None)]))], plan)
    result = write_partition_exports(s3_store, "2026-03-17", [("u2", iter([(new, None)]))], plan)
    assert len(result.deleted) == 2
    keys = sorted(o.key for o in s3_store.list("exports/") if not o.key.startswith("exports/_conversations/"))
    assert len(keys) == 2 and all("Second-name" in k for k in keys)
    late = write_partition_exports(s3_store, "2026-03-14", [("u1", iter([(old, None)]))], plan)
    assert late.skipped_older == 1
    assert sorted(o.key for o in s3_store.list("exports/") if not o.key.startswith("exports/_conversations/")) == keys
