#!/usr/bin/env python3
"""The demo: put the built-in sample exports into the local bucket and materialize every asset.

Run by `make demo` after the local services are up. Runs are recorded in
DAGSTER_HOME (.dagster_home/ by default), so `dagster dev` shows them afterwards. The demo scans
raw/ as the upload sensor does before it runs the days, and leaves the sensor's cursor past its
own uploads, so `make ui`'s first tick finds nothing new (no run that skips them all and shows
zeros). It prints what it does at INFO, without the warnings a user has no use for.
Its environment is deploy/local.env's, with CHATETL_STORE=s3 and that DAGSTER_HOME as
defaults (the real environment wins): started without it, the script starts itself again
with it (deploy/local_env.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "deploy"))

from dagster_home import ensure as ensure_dagster_home
from local_env import ensure_local_env

from chatetl.graph.connection import neo4j_settings, open_driver
from chatetl.ingest.groups import group_of
from chatetl.layout import EXPORTS_PREFIX, NORMALIZED_PREFIX, QUARANTINE_PREFIX, RAG_DOCUMENTS_PREFIX, RAW_PREFIX, is_upload
from chatetl.search import search
from chatetl.settings import Settings
from chatetl.storage import S3ObjectStore, put_bytes_if_changed

DEMO_DEFAULTS = {"CHATETL_STORE": "s3", "DAGSTER_HOME": str(REPO / ".dagster_home")}
# the runs' own log at INFO (Dagster's console default is DEBUG: every step event)
RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
SENSOR = "upload_sensor"


def quiet_warnings() -> None:
    """Dagster's notices about its own beta and preview features mean nothing to a user of the demo."""
    from dagster import BetaWarning, PreviewWarning

    for category in (BetaWarning, PreviewWarning):
        warnings.filterwarnings("ignore", category=category)


def scan_as_the_sensor(instance: Any, defs: Any) -> str | None:
    """The upload sensor's scan of raw/, tick after tick until it has seen every upload (it records the
    uploads' index, so the runs read it, and their days' coverage); its cursor at the end."""
    from dagster import SensorResult, build_sensor_context

    from assets.sensors import upload_sensor

    cursor = None
    for _tick in range(100):  # (the sensor's caps bound each tick: a few ticks see the samples)
        with build_sensor_context(instance=instance, cursor=cursor, resources=defs.resources, sensor_name=SENSOR) as context:
            result = upload_sensor(context)
        if not isinstance(result, SensorResult):
            break
        cursor = result.cursor
        if not result.run_requests:  # a tick that found nothing new: every upload is seen
            break
    return cursor


def set_sensor_cursor(cursor: str) -> None:
    """The sensor's cursor stored in DAGSTER_HOME by Dagster's own command line: `dagster sensor cursor`
    (which records a sensor it has no state of as stopped), then `dagster sensor start` (running, the
    cursor kept)."""
    where = ["-w", str(REPO / "workspace.yaml")]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    for args in (["cursor", SENSOR, "--set", cursor], ["start", SENSOR]):
        done = subprocess.run([sys.executable, "-m", "dagster", "sensor", *args, *where], cwd=REPO, env=env,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            print(f"could not {args[0]} {SENSOR} (its first tick may rerun the samples): {last}", file=sys.stderr)
            return


def main() -> int:
    # imported here, in the demo's environment: the definitions read their settings when they load
    quiet_warnings()
    from dagster import DagsterInstance

    from assets.definitions import defs
    from assets.partitions import upload_partitions
    from chatetl.samples import sample_uploads

    ensure_dagster_home(os.environ["DAGSTER_HOME"])  # dagster.yaml with the run and neo4j pool limits
    settings = Settings.from_env()
    store = (defs.resources or {})["object_store"].store
    if isinstance(store, S3ObjectStore):  # (CHATETL_STORE=s3)
        client = store.client
        if store.bucket not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
            client.create_bucket(Bucket=store.bucket)
    for key, data in sample_uploads().items():
        state = "uploaded" if put_bytes_if_changed(store, key, data) else "already there"
        print(f"sample {store.uri(key)}: {state}")

    # a partition per uploader and day, added as the sensor adds them (only where uploads are)
    partitions = sorted({group_of(info).key for info in store.list(RAW_PREFIX) if is_upload(info.key)})
    instance = DagsterInstance.get()
    instance.add_dynamic_partitions(upload_partitions.name or "", partitions)
    cursor = scan_as_the_sensor(instance, defs)
    job = defs.resolve_job_def("ingest_job")
    for partition in partitions:
        print(f"materializing partition {partition} ...")
        result = job.execute_in_process(partition_key=partition, instance=instance, raise_on_error=False, run_config=RUN_CONFIG)
        if not result.success:
            print(f"run {result.run_id} for {partition} FAILED; see `dagster dev` or the log above", file=sys.stderr)
            return 1
        for event in result.get_asset_materialization_events():
            mat = event.materialization
            shown = {k: v.value for k, v in mat.metadata.items() if isinstance(v.value, (int, float)) or k in ("neo4j",)}
            print(f"  {mat.asset_key.to_user_string()}: {json.dumps(shown, default=str)}")

    if cursor:
        set_sensor_cursor(cursor)
    neo4j = neo4j_settings(settings)
    with open_driver(settings=settings) as driver:
        records, _, _ = driver.execute_query(
            "MATCH (c:Conversation) RETURN c.source AS source, count(c) AS conversations, sum(c.message_count) AS total_messages",
            database_=neo4j["database"],
        )
        hits = search(driver, DEMO_QUERY, k=3, store=store, database=neo4j["database"])
    print()
    print("Done. What it produced and where to look:")
    for r in records:
        print(f"  Neo4j: {r['conversations']} {r['source']} conversations, {r['total_messages']} visible messages")
    print(f"  Neo4j Bolt:         {neo4j['uri']} (user {neo4j['user']}, password in deploy/local.env)")
    for prefix in (RAW_PREFIX, NORMALIZED_PREFIX, RAG_DOCUMENTS_PREFIX, EXPORTS_PREFIX, QUARANTINE_PREFIX):
        n = sum(1 for _ in store.list(prefix))
        print(f"  {prefix:<14} {store.uri(prefix)}  ({n} objects)")
    print(f"  S3 endpoint:        {settings.s3_endpoint_url} (keys in deploy/local.env)")
    print("  Dagster UI:         make ui   (then open http://127.0.0.1:3000)")
    print(f"  Run at:             {datetime.now(UTC).isoformat(timespec='seconds')}")
    print()
    print(f'Search (hybrid: full text and embeddings) for "{DEMO_QUERY}", top {len(hits)}:')
    for hit in hits:
        c = hit.conversation
        snippet = " ".join(hit.snippet(160)[0].split())
        print(f"  {hit.rank}. {c['title'] or c['conversation_id']} ({c['platform']}, {str(c['created_at'] or '')[:10]}): {snippet}")
    print(f'  More: .venv/bin/chatetl search "{DEMO_QUERY}" (with deploy/local.env\'s settings)')
    return 0


# a paraphrase, not a quote, of what one sample chat is about (the average of a list of numbers)
DEMO_QUERY = "averaging three numbers"


if __name__ == "__main__":
    ensure_local_env(DEMO_DEFAULTS)  # returns only with that environment (else the script starts again with it)
    sys.exit(main())
