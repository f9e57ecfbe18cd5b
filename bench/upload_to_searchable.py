"""Upload to searchable: the wall time from a small upload's PUT into the bucket until `chatetl search` finds it.

    .venv/bin/python deploy/local_env.py NEO4J_URI=bolt://127.0.0.1:7687 CHATETL_S3_ENDPOINT_URL=http://127.0.0.1:9000 \\
        -- .venv/bin/python bench/upload_to_searchable.py [--mb 16] [--parts 4] [--small-mb 1] [--uploads 5]

On Dagster's production topology without containers (tests/production_topology.py: a throwaway PostgreSQL
holding the instance, the code location's gRPC server, the webserver, the daemon with the queued run
coordinator and deploy/dagster.yaml's limits), the S3 server and the Neo4j of the environment (the graph is
emptied first; the bucket is a new one, removed afterwards). The upload sensor is the only instigator on.

A day is first filled: `--mb` MB of generated ChatGPT-shaped JSON in `--parts` uploads of one uploader,
brought in by the sensor's runs. Then, `--uploads` times, that uploader PUTs a new upload of about
`--small-mb` MB whose first conversation holds a word found nowhere else, and the bench searches for the
word (chatetl.search.search, hybrid, the built-in model) every half second until that conversation is the
answer. Each upload's run is left to finish (exports too) before the next PUT. Printed per upload and as
medians: the wait for the sensor's tick (PUT to the run's creation), the queue (created to dequeued), the
run worker's start (dequeued to the run's start), each step's start-up (its launch to its start) and
duration, the search's lag after `documents` succeeded, and the total (`--events FILE`: every event of
those runs, for a closer look).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

UPLOADER = "alice"
RUN_TIMEOUT = 900.0  # one run of the day's first load on a loaded 2-core machine
POLL = 0.5


def small_upload(path: Path, target_bytes: int, word: str, seed: int) -> str:
    """A conversations.json of about `target_bytes` whose first conversation's first turn holds `word`; that conversation's id."""
    from chatgpt_shaped import conversation

    rng = random.Random(seed)
    first = ""
    written = n = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write("[")
        while written < target_bytes:
            conv = conversation(rng, n)
            if n == 0:
                first = conv["id"]
                conv["title"] = f"The {word} question"
                turn = conv["mapping"]["client-created-root"]["children"][0]
                parts = conv["mapping"][turn]["message"]["content"]["parts"]
                parts[0] = f"What does {word} mean, and where does the word {word} come from? " + parts[0]
            chunk = ("," if n else "") + json.dumps(conv)
            f.write(chunk)
            written += len(chunk)
            n += 1
        f.write("]")
    return first


@dataclass
class Timeline:
    """One upload's path, in seconds from its PUT."""

    put: float
    created: float | None = None  # the sensor's tick requested the run
    dequeued: float | None = None  # the daemon took it from the queue and launched its worker
    started: float | None = None  # the run worker is up
    steps: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # step: (launched, started, ended)
    found: float | None = None
    ended: float | None = None

    def parts(self) -> dict[str, float]:
        """Each stretch's length (a step: its start-up, launched to started, and its duration)."""
        out: dict[str, float] = {}
        if self.created is not None:
            out["sensor tick (PUT -> run created)"] = self.created
        if self.created is not None and self.dequeued is not None:
            out["queued (created -> dequeued)"] = self.dequeued - self.created
        if self.dequeued is not None and self.started is not None:
            out["run worker start (dequeued -> run start)"] = self.started - self.dequeued
        for step, (launched, start, end) in sorted(self.steps.items(), key=lambda s: s[1][1]):
            out[f"{step}: start-up"] = start - launched
            out[f"{step}: duration"] = end - start
        docs = self.steps.get("documents")
        if docs and self.found is not None:
            out["search finds it (after documents)"] = self.found - docs[2]
        if self.found is not None:
            out["UPLOAD TO SEARCHABLE"] = self.found
        if self.ended is not None:
            out["run ended (exports too)"] = self.ended
        return out

    def lines(self) -> list[str]:
        """The run as a timeline: when each stretch began and ended, seconds after the PUT."""
        out = [f"  {'run created':<40}{self.created or 0:>8.1f}",
               f"  {'run dequeued':<40}{self.dequeued or 0:>8.1f}",
               f"  {'run started':<40}{self.started or 0:>8.1f}"]
        for step, (launched, start, end) in sorted(self.steps.items(), key=lambda s: s[1][1]):
            out.append(f"  {step:<40}{launched:>8.1f}{start:>8.1f}{end:>8.1f}")
        out.append(f"  {'found by search':<40}{self.found or 0:>8.1f}")
        out.append(f"  {'run ended':<40}{self.ended or 0:>8.1f}")
        return out


PLANNED = ("ASSET_MATERIALIZATION_PLANNED", "ASSET_CHECK_EVALUATION_PLANNED")


def read_timeline(instance: Any, record: Any, put: float, found: float | None) -> Timeline:
    """The run's events, as seconds after `put` (an epoch time)."""
    from dagster import DagsterEventType as E

    t = Timeline(put=put, found=None if found is None else found - put, created=record.create_timestamp.timestamp() - put)
    steps: dict[str, list[float | None]] = {}
    for event in instance.all_logs(record.dagster_run.run_id):
        if not event.is_dagster_event or event.dagster_event.event_type_value in PLANNED:
            continue
        kind, at = event.dagster_event.event_type, event.timestamp - put
        if kind == E.RUN_STARTING:
            t.dequeued = at
        elif kind == E.RUN_START:
            t.started = at
        elif kind in (E.RUN_SUCCESS, E.RUN_FAILURE):
            t.ended = at
        step = event.dagster_event.step_key
        if step:
            times = steps.setdefault(step, [at, None, None])  # launched: the step's first event of the run
            if kind == E.STEP_START:
                times[1] = at
            elif kind in (E.STEP_SUCCESS, E.STEP_FAILURE):
                times[2] = at
    t.steps = {s: (v[0], v[1], v[2]) for s, v in steps.items() if v[0] is not None and v[1] is not None and v[2] is not None}
    return t


def runs_since(instance: Any, since: float) -> list[Any]:
    from dagster import RunsFilter

    return list(reversed(instance.get_run_records(filters=RunsFilter(job_name="ingest_job", created_after=_datetime(since)))))


def _datetime(epoch: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC)


def wait_until(what: str, check: Any, processes: list[Any], timeout: float = RUN_TIMEOUT) -> Any:
    from production_topology import wait_for

    return wait_for(what, check, processes, timeout)


def settle(instance: Any, since: float, tick: float, processes: list[Any]) -> list[Any]:
    """Wait until the sensor has had a tick after `since` and every run it started since then has ended; those runs."""
    from dagster import DagsterRunStatus

    def done() -> list[Any] | None:
        records = runs_since(instance, since)
        if not records or time.time() - since < 2 * tick:
            return None
        if any(not r.dagster_run.is_finished for r in records):
            return None
        return records

    records = wait_until("the sensor's runs to end", done, processes)
    failed = [r.dagster_run.run_id for r in records if r.dagster_run.status != DagsterRunStatus.SUCCESS]
    if failed:
        raise SystemExit(f"runs failed: {failed}")
    return records


@contextlib.contextmanager
def production(bucket: str, work: Path) -> Iterator[dict[str, Any]]:
    """tests/production_topology.py's `deployment` on a throwaway PostgreSQL, outside pytest."""
    import pytest
    from postgres_server import running_postgres
    from production_topology import deployment

    patch = pytest.MonkeyPatch()
    postgres = running_postgres()
    server = next(postgres)
    try:
        topology = contextlib.contextmanager(deployment.__wrapped__)  # the fixture's own function
        with topology(postgres=server, services={}, s3_bucket=bucket, tmp_path=work, monkeypatch=patch) as d:
            yield d
    finally:
        patch.undo()
        next(postgres, None)  # what follows its yield: the server stopped and removed


def wipe_graph() -> None:
    from chatetl.graph.connection import open_driver

    driver = open_driver()
    with driver.session(database=os.environ.get("NEO4J_DATABASE") or None) as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    driver.close()


@contextlib.contextmanager
def new_bucket() -> Iterator[str]:
    from chatetl.storage import S3ObjectStore, s3_client

    client = s3_client(os.environ.get("CHATETL_S3_ENDPOINT_URL"))
    name = f"chatetl-bench-searchable-{uuid.uuid4().hex[:8]}"
    client.create_bucket(Bucket=name)
    try:
        yield name
    finally:
        S3ObjectStore(client, name).delete_prefix("")
        client.delete_bucket(Bucket=name)


def found_in_search(driver: Any, embedder: Any, word: str, conversation_id: str) -> bool:
    from chatetl.search import search

    hits = search(driver, word, k=3, embedder=embedder, database=os.environ.get("NEO4J_DATABASE") or None)
    return any(conversation_id in (h.conversation["conversation_id"] or "") for h in hits)


def fill_day(store: Any, instance: Any, args: argparse.Namespace, tick: float, processes: list[Any], tmp: Path) -> None:
    from chatgpt_shaped import write_chatgpt_file

    since = time.time()
    for i in range(args.parts):
        path = tmp / f"big-{i}.json"
        write_chatgpt_file(path, int(args.mb / args.parts * 1e6), seed=1000 + i)
        store.put_file(f"raw/{UPLOADER}/big-{i}.json", path)
        path.unlink()
    started = time.perf_counter()
    records = settle(instance, since, tick, processes)
    print(f"the day filled: {args.mb:g} MB in {args.parts} uploads, {len(records)} run(s), {time.perf_counter() - started:.0f} s",
          flush=True)


def one_upload(store: Any, instance: Any, driver: Any, embedder: Any, k: int, args: argparse.Namespace, tick: float,
               processes: list[Any], tmp: Path) -> Timeline:
    word = "quokka" + uuid.uuid4().hex[:10]
    path = tmp / f"small-{k}.json"
    conversation_id = small_upload(path, int(args.small_mb * 1e6), word, seed=5000 + k)
    put = time.time()
    store.put_file(f"raw/{UPLOADER}/small-{k}.json", path)
    path.unlink()
    deadline = time.monotonic() + RUN_TIMEOUT
    found = None
    while time.monotonic() < deadline:
        if found_in_search(driver, embedder, word, conversation_id):
            found = time.time()
            break
        if not all(p.alive() for p in processes):
            raise SystemExit("a process of the deployment exited:\n" + "\n".join(p.tail() for p in processes))
        time.sleep(POLL)
    records = settle(instance, put, tick, processes)
    mine = [r for r in records if r.dagster_run.tags.get("chatetl/upload", "").endswith(f"small-{k}.json")]
    if not mine:
        raise SystemExit(f"no run of small-{k}.json among {[r.dagster_run.tags for r in records]}")
    if args.events:
        with open(args.events, "a", encoding="utf-8") as out:
            for event in instance.all_logs(mine[0].dagster_run.run_id):
                kind = event.dagster_event.event_type_value if event.is_dagster_event else "log"
                out.write(f"{k}\t{event.timestamp - put:.2f}\t{event.step_key or ''}\t{kind}\t{(event.user_message or '')[:200]}\n")
    return read_timeline(instance, mine[0], put, found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=16.0, help="the day's first load, in MB of ChatGPT JSON")
    parser.add_argument("--parts", type=int, default=4, help="uploads the first load comes in")
    parser.add_argument("--small-mb", type=float, default=1.0, help="each new upload's size")
    parser.add_argument("--uploads", type=int, default=5, help="new uploads, one after another")
    parser.add_argument("--events", type=Path, help="append every event of the new uploads' runs to this file (seconds after the PUT)")
    args = parser.parse_args()

    from dagster import DagsterInstance
    from production_topology import start_sensor

    from assets.sensors import TICK_SECONDS
    from chatetl.graph.connection import open_driver
    from chatetl.rag.embeddings import load_embedder
    from chatetl.storage import S3ObjectStore, s3_client

    wipe_graph()
    timelines: list[Timeline] = []
    with tempfile.TemporaryDirectory(prefix="chatetl-searchable-") as tmp, new_bucket() as bucket, \
            production(bucket, Path(tmp)) as deployment:
        processes = deployment["processes"]
        store = S3ObjectStore(s3_client(os.environ.get("CHATETL_S3_ENDPOINT_URL")), bucket)
        instance = DagsterInstance.from_config(str(deployment["home"]))
        driver = open_driver()
        embedder = load_embedder()
        try:
            start_sensor(deployment["web_port"], "upload_sensor")
            fill_day(store, instance, args, TICK_SECONDS, processes, Path(tmp))
            for k in range(args.uploads):
                t = one_upload(store, instance, driver, embedder, k, args, TICK_SECONDS, processes, Path(tmp))
                timelines.append(t)
                print(f"upload {k + 1} (seconds after its PUT: launched, started, ended):", *t.lines(), sep="\n", flush=True)
        finally:
            driver.close()
            instance.dispose()
    print(f"\nday of {args.mb:g} MB in {args.parts} uploads, then {args.uploads} uploads of {args.small_mb:g} MB; sensor tick "
          f"{TICK_SECONDS} s; seconds, median over the uploads")
    names = [n for n in timelines[0].parts() if all(n in t.parts() for t in timelines)]
    for name in names:
        values = [t.parts()[name] for t in timelines]
        print(f"{name:<46}{statistics.median(values):>8.2f}   ({', '.join(f'{v:.1f}' for v in values)})")


if __name__ == "__main__":
    main()
