"""How the steps run: the retry policy, the pools, the reprocess run tag, and `daily_asset`."""


from collections.abc import Callable
from typing import Any

from dagster import AssetsDefinition, Backoff, Jitter, RetryPolicy, asset

from assets import pool_slots
from assets.partitions import range_backfill_policy, upload_partitions

# Steps that talk to S3 or Neo4j retry transient failures with backoff (2 s, 4 s, 8 s, jittered).
# Data problems raise dagster.Failure(allow_retries=False): retrying cannot fix them.
NETWORK_RETRY = RetryPolicy(max_retries=3, delay=2, backoff=Backoff.EXPONENTIAL, jitter=Jitter.PLUS_MINUS)

# The pool of the steps that write to Neo4j (graph, documents; rag_files only reads it). Its limit comes from the
# instance: `concurrency: pools: default_limit` in dagster.yaml (deploy/dagster.yaml sets 1),
# or `dagster instance concurrency set neo4j 2`.
NEO4J_POOL = "neo4j"
# ... and a pool of one slot admits one step at a time: Dagster's slot claim is made atomic
# in every process that loads these definitions (run workers claim the slots).
pool_slots.install()

# The steps that rewrite what every group of a day shares, outside Neo4j: rag_files (the day's rag/ files,
# chosen by which state the graph holds) and exports (the files of the day's conversations, its zip and
# training file, the bucket's archive page). Two runs of one day's groups each write the whole day: one
# at a time, the later one always reads the earlier one's graph load, so the last files written are current.
RAG_FILES_POOL = "rag_files"
EXPORTS_POOL = "exports"

# Tag a run (or a backfill, from the launch dialog) with this to normalize every upload
# again even when its ledger says it is unchanged (as the `reprocess` run config does).
REPROCESS_TAG = "chatetl/reprocess"


def daily_asset(**kwargs: Any) -> Callable[[Callable[..., Any]], AssetsDefinition]:
    """`@asset` for every asset of the pipeline: a partition per group of uploads (an uploader's of a day),
    several per backfill run (each asset loops over its run's groups or days), transient failures retried."""
    decorator: Callable[[Callable[..., Any]], AssetsDefinition] = asset(
        partitions_def=upload_partitions, backfill_policy=range_backfill_policy, retry_policy=NETWORK_RETRY, **kwargs
    )
    return decorator
