"""Upload discovery benchmark: the bounded sensor scan and the per-day index, beside listing raw/.

    CHATETL_S3_ENDPOINT_URL=http://127.0.0.1:8333 .venv/bin/python bench/upload_discovery.py [--uploads 20000] [--days 30]

Against the real S3 server of CHATETL_S3_ENDPOINT_URL (credentials from deploy/local.env), in a
bucket of its own (created, filled with N tiny generated uploads, deleted afterwards). The
objects all arrive today, so the "days" are simulated by indexing them in --days batches. Prints:

- a sensor tick in steady state (nothing new): the fast path after `high` plus one capped
  step of the re-scan (5,000 keys), beside the baseline of listing all of raw/ every tick
  (what the first sensor did);
- a tick that finds one new upload whose key sorts last;
- how many ticks a full re-scan cycle takes at the default cap, and its total time;
- a partition run finding its day's uploads from the index (list its prefix, read the
  batch files, HEAD each upload), beside the baseline of listing all of raw/.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from chatetl.ingest.index import (
    UploadBatch,
    current_state,
    indexed_uploads,
    record_batches,
)
from chatetl.ingest.scan import ScanCursor, discover
from chatetl.layout import RAW_PREFIX

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "deploy"))

from local_env import ensure_local_env

from chatetl.settings import Settings
from chatetl.storage import S3ObjectStore, s3_client


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--uploads", type=int, default=20000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--cap", type=int, default=5000)
    args = ap.parse_args()
    ensure_local_env()  # deploy/local.env's settings (and S3 keys) where the environment has none: starts the script again
    endpoint = Settings.from_env().s3_endpoint_url
    client = s3_client(endpoint)
    bucket = f"chatetl-bench-{uuid.uuid4().hex[:8]}"
    client.create_bucket(Bucket=bucket)
    store = S3ObjectStore(client, bucket)
    try:
        keys = [f"raw/participant-{i % 997:04d}/export-{i:06d}.json" for i in range(args.uploads)]
        _, t_fill = timed(lambda: list(ThreadPoolExecutor(32).map(lambda k: store.put_bytes(k, b"[]"), keys)))
        print(f"{args.uploads} uploads in s3://{bucket} ({endpoint}), filled in {t_fill:.1f} s")

        # drain the backlog as the sensor would, then index it in simulated days
        cursor = ScanCursor()
        ticks = 0
        t0 = time.perf_counter()
        found = []
        while True:
            step = discover(store, cursor, now=time.time(), max_keys=args.cap)
            cursor, ticks = step.cursor, ticks + 1
            found += step.changes
            if step.fast_path_drained:
                break
        t_drain = time.perf_counter() - t0
        print(f"backlog: {len(found)} uploads found in {ticks} ticks of <= {args.cap} keys, {t_drain:.1f} s in all ({t_drain / ticks:.2f} s per tick)")
        per_day = {}
        for i, info in enumerate(found):
            per_day.setdefault(f"2026-01-{1 + i % args.days:02d}", []).append(info)
        for day, infos in per_day.items():
            for j in range(0, len(infos), 50):  # ~ one batch file per tick that found uploads
                record_batches(store, [UploadBatch(day, tuple(infos[j : j + 50]))])

        # steady state: nothing new
        _, t_tick = timed(lambda: discover(store, cursor, now=time.time(), max_keys=args.cap))
        _, t_full = timed(lambda: sum(1 for _ in store.list(RAW_PREFIX)))
        print(f"steady tick (fast path + {args.cap}-key re-scan step): {t_tick:.2f} s   baseline full listing of raw/: {t_full:.2f} s")

        store.put_bytes("raw/zzz-newest.json", b"[]")
        step, t_new = timed(lambda: discover(store, cursor, now=time.time(), max_keys=args.cap))
        print(f"tick finding a new last-sorting key: {t_new:.2f} s, found {[c.key for c in step.changes]}")

        cyc_cursor, cyc_ticks = step.cursor, 0
        t0 = time.perf_counter()
        while True:
            s = discover(store, cyc_cursor, now=time.time(), max_keys=args.cap)
            cyc_cursor, cyc_ticks = s.cursor, cyc_ticks + 1
            if s.cycle_completed:
                break
        print(f"full re-scan cycle (finds replaced uploads): {cyc_ticks} ticks, {time.perf_counter() - t0:.1f} s of work in all")

        day = "2026-01-07"
        idx, t_idx = timed(lambda: indexed_uploads(store, day, compact=False))
        _, t_head = timed(lambda: current_state(store, [u.key for u in idx]))
        _, t_list = timed(lambda: [o for o in store.list(RAW_PREFIX) if o.key in {u.key for u in idx}])
        print(
            f"partition run, {len(idx)} uploads of {day}: index {t_idx:.2f} s + HEAD each {t_head:.2f} s = {t_idx + t_head:.2f} s"
            f"   baseline full listing of raw/: {t_list:.2f} s"
        )
        idx2, t_comp = timed(lambda: indexed_uploads(store, day))
        _, t_after = timed(lambda: indexed_uploads(store, day))
        print(f"index read with compaction: {t_comp:.2f} s once, then {t_after:.2f} s ({len(idx2)} uploads)")
    finally:
        keys = [o.key for o in store.list("")]
        list(ThreadPoolExecutor(32).map(store.delete, keys))
        client.delete_bucket(Bucket=bucket)
    return 0


if __name__ == "__main__":
    sys.exit(main())
