"""A bad upload shows in the lineage: `uploads_read_cleanly` warns (WARN, not blocking) on the day's
partition for an unreadable upload, what went to quarantine/ and format drift, while the good upload
still loads."""

from __future__ import annotations

import io
import json
import zipfile

from dagster import AssetCheckSeverity, DagsterInstance
from upload_partitions import partition_for

from chatetl.ingest.index import partition_of
from chatetl.ingest.ledger import Ledger
from chatetl.samples import chatgpt_export


def _evaluation(result, name: str):
    (found,) = [e for e in result.get_asset_check_evaluations() if e.check_name == name]
    return found


def test_an_unreadable_upload_warns_on_its_partition_and_the_run_goes_on(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    store.put_bytes("raw/good.zip", chatgpt_export())
    info = store.put_bytes("raw/garbage.bin", bytes(range(256)) * 10)
    day = partition_of(info)
    instance = DagsterInstance.ephemeral()
    assert partition_for(instance, info) == day  # (an upload at the top of raw/: its group is the day)
    result = definitions.resolve_job_def("ingest_job").execute_in_process(partition_key=day, instance=instance)
    assert result.success
    warned = _evaluation(result, "uploads_read_cleanly")
    assert not warned.passed and warned.severity is AssetCheckSeverity.WARN
    assert warned.partition == day
    assert warned.metadata["unreadable_uploads"].value == 1 and warned.metadata["quarantined_files"].value >= 2
    assert "raw/garbage.bin" in warned.metadata["uploads_with_problems"].value
    assert day in warned.description and "1 unreadable upload(s)" in warned.description
    mats = {e.materialization.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert {"normalized", "graph", "documents", "exports"} <= mats  # a warning blocks nothing


def test_clean_uploads_pass(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    info = store.put_bytes("raw/good.zip", chatgpt_export())
    instance = DagsterInstance.ephemeral()
    result = definitions.resolve_job_def("ingest_job").execute_in_process(partition_key=partition_for(instance, info), instance=instance)
    warned = _evaluation(result, "uploads_read_cleanly")
    assert warned.passed and warned.metadata["quarantined_files"].value == 0


def test_format_drift_is_kept_per_upload_and_warns(definitions, clean_graph):
    """A role the reader does not know (a platform's new export format) is read, kept in the upload's
    ledger entry and named by the check."""
    store = definitions.resources["object_store"].store
    convs = json.loads(zipfile.ZipFile(io.BytesIO(chatgpt_export())).read("conversations-000.json"))
    first = next(node["message"] for node in convs[0]["mapping"].values() if node.get("message"))
    first["author"]["role"] = "oracle"
    info = store.put_bytes("raw/drifted.json", json.dumps(convs).encode())
    instance = DagsterInstance.ephemeral()
    day = partition_for(instance, info)
    result = definitions.resolve_job_def("ingest_job").execute_in_process(partition_key=day, instance=instance)
    assert result.success
    warned = _evaluation(result, "uploads_read_cleanly")
    assert not warned.passed and warned.severity is AssetCheckSeverity.WARN
    assert warned.metadata["uploads_with_drift"].value == 1 and warned.metadata["unreadable_uploads"].value == 0
    assert "chatgpt.role:oracle" in warned.metadata["format_drift"].value
    assert "raw/drifted.json" in warned.metadata["uploads_with_problems"].value and "1 with format drift" in warned.description
    (entry,) = Ledger.load(store, day).entries.values()
    assert entry.drift == {"chatgpt.role:oracle": 1}
