"""What Dagster itself is told of the assets (assets/policies.py), read from the loaded Definitions:
the assets after `normalized` run by themselves once their upstream partition is updated and never
past a failed blocking check (evaluated with Dagster's own test helper on an ephemeral instance), the
documents carry the "searchable within" freshness policy, and the code versions follow the library's
code digests (a parser or renderer change shows the partitions as needing reprocessing)."""

from __future__ import annotations

import warnings

import pytest
from dagster import (
    AssetCheckEvaluation,
    AssetKey,
    AssetMaterialization,
    AssetSelection,
    DagsterInstance,
    evaluate_automation_conditions,
)
from upload_partitions import added

from assets.checks import NORMALIZED_CHECKS
from assets.definitions import build_definitions
from assets.policies import BEHIND_BLOCKING_CHECKS, DOWNSTREAM, SEARCHABLE_WITHIN
from chatetl.exports.pieces import render_fingerprint
from chatetl.ingest.ledger import parser_fingerprint
from chatetl.rag.stamps import rag_fingerprint
from chatetl.settings import Settings

PARTITION = "2025-03-01/alice"


@pytest.fixture(scope="module")
def defs(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_definitions(Settings.from_env({"CHATETL_STORE": "local", "CHATETL_LOCAL_STORE_ROOT": str(root)}))


def _node(defs, name: str):
    return defs.resolve_asset_graph().get(AssetKey(name))


def test_each_asset_says_when_it_runs_how_fresh_it_is_and_which_code_made_it(defs):
    for name in DOWNSTREAM:
        assert _node(defs, name).automation_condition == BEHIND_BLOCKING_CHECKS
    assert _node(defs, "raw_uploads").automation_condition is None and _node(defs, "normalized").automation_condition is None
    policy = _node(defs, "documents").freshness_policy
    assert policy is not None and policy.fail_window.to_timedelta() == SEARCHABLE_WITHIN
    versions = {name: _node(defs, name).code_version for name in ("normalized", "rag_files", "exports")}
    assert versions == {"normalized": parser_fingerprint(), "rag_files": rag_fingerprint(), "exports": render_fingerprint()}


def _requested(result) -> dict[str, list[str]]:
    return {r.key.to_user_string(): sorted(r.true_subset.get_internal_subset_value().get_partition_keys())
            for r in result.results if r.true_subset.size}


def _checks(instance, passed: bool) -> None:
    for check_name, _ in NORMALIZED_CHECKS.values():
        instance.report_runless_asset_event(AssetCheckEvaluation(asset_key=AssetKey("normalized"), check_name=check_name, passed=passed,
                                                                 partition=PARTITION))


@pytest.mark.parametrize("checks_pass", [True, False])
def test_downstream_runs_once_normalized_is_updated_unless_a_blocking_check_failed(defs, checks_pass):
    instance = DagsterInstance.ephemeral()
    added(instance, PARTITION)
    selection = AssetSelection.assets(*DOWNSTREAM)
    first = evaluate_automation_conditions(defs, instance, asset_selection=selection)
    assert first.total_requested == 0  # nothing upstream yet: nothing to do
    for name in ("raw_uploads", "normalized"):
        instance.report_runless_asset_event(AssetMaterialization(asset_key=name, partition=PARTITION))
    _checks(instance, checks_pass)
    second = evaluate_automation_conditions(defs, instance, asset_selection=selection, cursor=first.cursor)
    if checks_pass:  # the assets right after normalized; the rest once those are updated
        assert _requested(second) == {"graph": [PARTITION], "exports": [PARTITION]}
    else:
        assert second.total_requested == 0
