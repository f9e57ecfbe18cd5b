"""The restore drill of deploy/README.md (Backup and restore): the graph and the RAG documents are
rebuilt from `normalized/` alone, and equal what the pipeline first made.

The built-in samples go through the whole ingest job into a local-folder bucket and the test
Neo4j; the graph and every rag/ file are dumped; then the graph is emptied and every key but
`normalized/` deleted (raw uploads, manifests, the ledger, state/, quarantine/, rag/, exports/);
the graph, rag_files and documents assets, run for the same day, give the same dump.
"""

from __future__ import annotations

import hashlib
import os

import pytest
from dagster import AssetKey, DagsterInstance
from graph_inputs import graph_dump, wipe
from upload_partitions import day_partitions, run_day

from chatetl.ingest.index import partition_of
from chatetl.layout import NORMALIZED_PREFIX
from chatetl.samples import sample_uploads

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None
# what the restore needs from a backup of the bucket: the normalized tables, nothing else
KEPT = (NORMALIZED_PREFIX,)


def rag_files(store) -> dict[str, str]:
    return {o.key: hashlib.sha256(store.get_bytes(o.key)).hexdigest() for o in store.list("rag/")}


def test_graph_and_documents_are_rebuilt_from_normalized_alone(clean_graph, tmp_path, monkeypatch):
    monkeypatch.setenv("CHATETL_STORE", "local")
    monkeypatch.setenv("CHATETL_LOCAL_STORE_ROOT", str(tmp_path / "bucket"))
    import assets.definitions

    definitions = assets.definitions.build_definitions()
    store = definitions.resources["object_store"].store
    days = {partition_of(store.put_bytes(key, data)) for key, data in sample_uploads().items()}
    (day,) = days
    job = definitions.resolve_job_def("ingest_job")
    instance = DagsterInstance.ephemeral()
    assert all(run.success for run in run_day(job, instance, store, day))
    partitions = day_partitions(instance, store, day)

    graph, rag = graph_dump(clean_graph, DB), rag_files(store)
    assert any('"Document"' in node for node in graph["nodes"]) and any('"Chunk"' in node for node in graph["nodes"])
    assert any(key.startswith("rag/documents/") for key in rag) and any(key.startswith("rag/chunks/") for key in rag)
    kept = {o.key for o in store.list("") if o.key.startswith(KEPT)}
    assert kept and all(key.endswith(".parquet") for key in kept)

    # the disaster: the graph and everything of the bucket but the normalized tables are gone
    wipe(clean_graph, DB)
    for info in list(store.list("")):
        if not info.key.startswith(KEPT):
            store.delete(info.key)
    assert {o.key for o in store.list("")} == kept

    # (the three assets write the whole day: a run of any of the day's partitions rebuilds it)
    rebuild = job.execute_in_process(partition_key=partitions[0], instance=instance,
                                     asset_selection=[AssetKey("graph"), AssetKey("rag_files"), AssetKey("documents")])
    assert rebuild.success
    assert graph_dump(clean_graph, DB) == graph
    assert rag_files(store) == rag
