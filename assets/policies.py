"""How the steps run: the retry policy, the pools, the reprocess run tag, `daily_asset`, and what
Dagster itself is told of each asset: when it may run by itself, how fresh it should be, which code made it."""


import inspect
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from dagster import (
    AssetCheckSpec,
    AssetsDefinition,
    AssetSpec,
    AutomationCondition,
    Backoff,
    FreshnessPolicy,
    Jitter,
    RetryPolicy,
    asset,
    multi_asset,
)

from assets import pool_slots
from assets.partitions import range_backfill_policy, upload_partitions
from chatetl.exports.pieces import render_fingerprint
from chatetl.ingest.ledger import parser_fingerprint
from chatetl.rag.stamps import rag_fingerprint

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


def daily_asset(*, check_specs: Sequence[AssetCheckSpec] = (), **kwargs: Any) -> Callable[[Callable[..., Any]], AssetsDefinition]:
    """`@asset` for every asset of the pipeline: a partition per group of uploads (an uploader's of a day),
    several per backfill run (each asset loops over its run's groups or days), transient failures retried.

    With `check_specs`, the asset's checks are evaluated by its own function, in its step (no process
    of their own): a subsettable asset (Dagster's `multi_asset` of one asset), so the function
    materializes the asset when the run selected it, then yields the selected checks' results."""
    policies: dict[str, Any] = {"partitions_def": upload_partitions, "backfill_policy": range_backfill_policy, "retry_policy": NETWORK_RETRY}
    if not check_specs:
        decorator: Callable[[Callable[..., Any]], AssetsDefinition] = asset(**policies, **kwargs)
        return decorator

    def with_checks(fn: Callable[..., Any]) -> AssetsDefinition:
        of_asset = {k: kwargs[k] for k in ("deps", "kinds", "metadata", "code_version", "group_name") if k in kwargs}
        of_op = {k: v for k, v in kwargs.items() if k not in of_asset}
        spec = AssetSpec(fn.__name__, description=inspect.cleandoc(fn.__doc__) if fn.__doc__ else None, **of_asset)
        return multi_asset(name=fn.__name__, specs=[spec], check_specs=check_specs, can_subset=True, **policies, **of_op)(fn)

    return with_checks


# Declarative automation (the `default_automation_condition_sensor`, off until turned on in the UI): an asset
# after `normalized` runs by itself once its upstream partition is updated, and never while a blocking check
# of an upstream asset failed (the tables' checks hold back graph and exports, the graph's the documents).
BEHIND_BLOCKING_CHECKS = (AutomationCondition.eager() & AutomationCondition.all_deps_blocking_checks_passed()).with_label(
    "eager, once upstream's blocking checks passed"
)
DOWNSTREAM = ("graph", "rag_files", "documents", "exports")

# "An upload is searchable within SEARCHABLE_WITHIN": Dagster's time-window freshness counts from the
# asset's latest materialization, so `documents` shows as stale when no upload has been made searchable
# for that long (with uploads arriving all the time, a sign the pipeline stalled; on a quiet day, only that).
SEARCHABLE_WITHIN = timedelta(minutes=30)
SEARCHABLE = FreshnessPolicy.time_window(fail_window=SEARCHABLE_WITHIN)


def code_versions() -> dict[str, str]:
    """Each asset whose output follows a digest of the library's code: the UI shows its partitions made by
    other code as needing reprocessing, and a rerun redoes them (the ledger, the rag/ stamps and the export
    pieces compare the same digest)."""
    return {"normalized": parser_fingerprint(), "rag_files": rag_fingerprint(), "exports": render_fingerprint()}


def as_dagster_knows_it(spec: AssetSpec) -> AssetSpec:
    """`spec` with its automation condition, freshness policy and code version."""
    name = spec.key.to_user_string()
    return spec.replace_attributes(
        automation_condition=BEHIND_BLOCKING_CHECKS if name in DOWNSTREAM else spec.automation_condition,
        freshness_policy=SEARCHABLE if name == "documents" else spec.freshness_policy,
        code_version=code_versions().get(name, spec.code_version),
    )
