"""The one Definitions object loads with every asset, sensor, schedule and resource."""

from __future__ import annotations

import importlib
import os

import pytest


def test_definitions_load_with_everything():
    from assets.definitions import defs

    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {"raw_uploads", "normalized", "graph", "rag_files", "documents", "exports"}
    assert defs.resolve_sensor_def("upload_sensor") is not None
    assert defs.resolve_schedule_def("daily_ingest_schedule") is not None
    job = defs.resolve_job_def("ingest_job")
    assert job.partitions_def is not None
    assert set(defs.resources) == {"object_store", "neo4j"}


def env_value(field):
    """A resource field's value: an EnvVar read from the environment (Dagster does it at run time)."""
    from dagster import EnvVar

    return field.get_value() if isinstance(field, EnvVar) else field


def test_resources_follow_the_environment(monkeypatch, tmp_path):
    from dagster import EnvVar

    from assets import definitions
    from resources import LocalObjectStoreResource, S3ObjectStoreResource

    monkeypatch.setenv("CHATETL_STORE", "local")
    monkeypatch.setenv("CHATETL_LOCAL_STORE_ROOT", str(tmp_path))
    local = definitions.object_store_resource()
    assert isinstance(local, LocalObjectStoreResource) and env_value(local.root) == str(tmp_path)
    assert isinstance(local.root, EnvVar) and local.store.root == tmp_path  # a setting that is set comes as an EnvVar
    monkeypatch.setenv("CHATETL_STORE", "s3")
    monkeypatch.setenv("CHATETL_S3_BUCKET", "research-bucket")
    monkeypatch.setenv("CHATETL_S3_PREFIX", "team-a")
    s3 = definitions.object_store_resource()
    assert isinstance(s3, S3ObjectStoreResource) and (env_value(s3.bucket), env_value(s3.prefix)) == ("research-bucket", "team-a")
    assert s3.store.uri("raw/x.json") == "s3://research-bucket/team-a/raw/x.json"


def test_unset_deployment_settings_are_local_defaults_and_no_password_is_in_the_config(monkeypatch):
    from assets import definitions
    from chatetl.settings import LOCAL_DEFAULTS, Settings

    env = {"CHATETL_STORE": "s3"}  # nothing else set: the local services
    neo4j = definitions.neo4j_resource(Settings.from_env(env))
    assert (neo4j.uri, neo4j.user, neo4j.database) == (LOCAL_DEFAULTS["NEO4J_URI"], "neo4j", "neo4j")
    assert neo4j.password is None  # the UI shows the config: no literal password in it
    assert LOCAL_DEFAULTS["NEO4J_PASSWORD"] not in repr(definitions.build_definitions(Settings.from_env(env)).resources)
    store = definitions.object_store_resource(Settings.from_env(env))
    assert (store.bucket, store.prefix, store.s3.endpoint_url, store.s3.region_name) == ("chatetl", "", None, "us-east-1")


def test_run_config_defaults_come_from_the_environment():
    from assets import definitions
    from chatetl.settings import Settings

    def defaults(env, asset):
        return definitions.build_definitions(Settings.from_env(env)).resolve_assets_def(asset).op.config_schema.as_field().default_value

    assert defaults({}, "graph") == {"deep": False}
    assert defaults({"CHATETL_GRAPH_DEEP": "yes"}, "graph") == {"deep": True}
    docs = defaults({"CHATETL_INCLUDE_TOOLS": "1", "CHATETL_RAG_INCLUDE_HIDDEN": "on", "CHATETL_CHUNK_MAX_CHARS": "900"}, "rag_files")
    assert docs == {"include_reasoning": False, "include_tools": True, "include_hidden": True, "include_branches": False,
                    "chunk_max_chars": 900, "chunk_overlap_chars": 200}
    ex = defaults({"CHATETL_EXPORT_FORMATS": "html,md", "CHATETL_EXPORT_ZIP_FORMATS": "none", "CHATETL_EXPORT_INCLUDE_REASONING": "1"}, "exports")
    assert (ex["formats"], ex["zip_formats"], ex["include_reasoning"], ex["include_tools"]) == (["md", "html"], [], True, False)
    assert defaults({}, "normalized") == {"reprocess": False}


def test_the_normalized_code_version_is_the_parser_fingerprint():
    from assets.definitions import defs
    from chatetl.ingest.ledger import parser_fingerprint

    asset = defs.resolve_assets_def("normalized")
    assert asset.code_versions_by_key[asset.key] == parser_fingerprint()


def test_a_bad_export_format_in_the_run_config_is_refused_before_the_run(tmp_path):
    import pytest
    from dagster import DagsterInstance, DagsterInvalidConfigError
    from upload_partitions import added

    from assets import definitions
    from chatetl.settings import Settings

    defs = definitions.build_definitions(Settings.from_env({"CHATETL_LOCAL_STORE_ROOT": str(tmp_path)}))
    job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection={defs.resolve_assets_def("exports").key})
    with pytest.raises(DagsterInvalidConfigError, match="pdf"):
        job.execute_in_process(
            partition_key=added(instance := DagsterInstance.ephemeral(), "2026-01-01"), instance=instance,
            run_config={"ops": {"exports": {"config": {"formats": ["md", "pdf"]}}}},
        )


def test_only_the_definitions_module_imports_dagster():
    """The core library stays pure: importing every module of it pulls in no Dagster (the
    Definitions are assembled in the Dagster layer, assets/definitions.py)."""
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2] / "chatetl"
    modules = sorted(
        "chatetl." + ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        for p in root.rglob("*.py")
        if p.name != "__main__.py"
    )
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print(sorted(m for m in sys.modules if m.startswith('dagster')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root.parent, env={**os.environ})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert importlib.import_module("assets.definitions").defs is not None


def test_production_gets_no_laptop_defaults():
    import pytest
    from dagster import EnvVar

    from assets import definitions
    from chatetl.settings import LOCAL_DEFAULTS, SettingError, Settings

    production = Settings.from_env({"CHATETL_ENV": "production"})
    assert production.neo4j_uri is None and production.neo4j_password is None and production.store is None
    with pytest.raises(SettingError, match="NEO4J_PASSWORD is not set"):
        production.require("NEO4J_PASSWORD")
    with pytest.raises(SettingError, match="CHATETL_STORE is not set"):
        definitions.object_store_resource(production)
    neo4j = definitions.neo4j_resource(production)  # an unset one fails when the resource starts, as Dagster's EnvVar does
    assert [getattr(neo4j, f).env_var_name for f in ("uri", "user", "password", "database")] == [
        "NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE"] and isinstance(neo4j.password, EnvVar)
    local = Settings.from_env({})
    assert local.neo4j_uri == LOCAL_DEFAULTS["NEO4J_URI"] and local.require("NEO4J_PASSWORD") == LOCAL_DEFAULTS["NEO4J_PASSWORD"]


def test_nothing_writes_the_environment():
    import pathlib
    import subprocess
    import sys

    code = (
        "import os\n"
        "before = dict(os.environ)\n"
        "import assets.definitions\n"
        "assets.definitions.build_definitions()\n"
        "from chatetl.settings import Settings\n"
        "Settings.from_env()\n"
        "assert dict(os.environ) == before, sorted(set(os.environ.items()) ^ set(before.items()))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "CHATETL_"))}
    repo = pathlib.Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=repo)
    assert out.returncode == 0, out.stderr


def test_bad_values_fail_loudly_naming_the_variable_and_the_value():
    import pytest

    from chatetl.settings import SettingError, Settings

    for name, value in (("CHATETL_GRAPH_DEEP", "maybe"), ("CHATETL_RAG_INCLUDE_TOOLS", "2"), ("CHATETL_SENSOR_MAX_KEYS", "lots"),
                        ("CHATETL_SENSOR_MAX_KEYS", "0"), ("CHATETL_SENSOR_MAX_SECONDS", "nan"), ("CHATETL_CHUNK_MAX_CHARS", "1.5"),
                        ("CHATETL_BACKFILL_DAYS_PER_RUN", "-1"), ("CHATETL_PARTITIONS_START", "yesterday"), ("CHATETL_STORE", "ftp")):
        with pytest.raises(SettingError, match=f"{name}='{value}'"):
            Settings.from_env({name: value})
    assert Settings.from_env({"CHATETL_GRAPH_DEEP": " On "}).graph_deep is True
    assert Settings.from_env({"CHATETL_GRAPH_DEEP": ""}).graph_deep is False  # empty is unset
    assert Settings.from_env({"CHATETL_SENSOR_MAX_SECONDS": "2.5"}).sensor_max_seconds == 2.5


@pytest.mark.parametrize(("chunking", "why"), [
    ({"chunk_max_chars": 5}, "chunk_max_chars"),
    ({"chunk_overlap_chars": -1}, "chunk_overlap_chars"),
    ({"chunk_max_chars": 100, "chunk_overlap_chars": 80}, "at most half"),
    ({"chunk_max_chars": 100, "chunk_overlap_chars": 500}, "at most half"),
])
def test_chunk_settings_that_do_not_fit_are_refused_when_the_run_is_launched(tmp_path, monkeypatch, chunking, why):
    """Dagster makes the run's plan (launchpad, sensor, backfill) before any step: a bad chunk size fails
    there, naming the setting, and no run starts; the steps before rag_files never ran."""
    from dagster import DagsterInstance, DagsterInvalidConfigError
    from upload_partitions import added

    from assets import definitions
    from chatetl.settings import Settings

    monkeypatch.setenv("CHATETL_LOCAL_STORE_ROOT", str(tmp_path))
    defs = definitions.build_definitions(Settings.from_env({"CHATETL_LOCAL_STORE_ROOT": str(tmp_path)}))
    job = defs.resolve_job_def("ingest_job")
    instance = DagsterInstance.ephemeral()
    with pytest.raises(DagsterInvalidConfigError, match=why) as refused:
        job.execute_in_process(partition_key=added(instance, "2026-01-01"), instance=instance,
                               run_config={"ops": {"rag_files": {"config": chunking}}})
    assert "rag_files" in str(refused.value) and "Traceback" not in str(refused.value)
    assert instance.get_runs() == []  # refused before a run (or any of its steps) existed
    assert not (tmp_path / "normalized").exists()


def test_chunk_settings_that_fit_still_launch(tmp_path, monkeypatch):
    from dagster._core.execution.api import create_execution_plan

    from assets import definitions
    from chatetl.settings import Settings

    monkeypatch.setenv("CHATETL_LOCAL_STORE_ROOT", str(tmp_path))
    defs = definitions.build_definitions(Settings.from_env({"CHATETL_LOCAL_STORE_ROOT": str(tmp_path)}))
    job = defs.resolve_job_def("ingest_job")
    plan = create_execution_plan(job, run_config={"ops": {"rag_files": {"config": {"chunk_max_chars": 400, "chunk_overlap_chars": 200}}}})
    assert "rag_files" in plan.step_keys_to_execute
    assert defs.resolve_assets_def("rag_files").op.config_schema.as_field().default_value["chunk_max_chars"] == 2000


LAUNCH_RUN = """
mutation ($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on LaunchRunSuccess { run { runId } }
  }
}"""


def test_the_launchpad_refuses_chunk_settings_that_do_not_fit(tmp_path, monkeypatch):
    """Launched as the UI launches (GraphQL `launchRun`, the code location in its own gRPC server):
    refused with the reason, and no run is created."""
    from dagster._core.test_utils import instance_for_test
    from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

    monkeypatch.setenv("CHATETL_LOCAL_STORE_ROOT", str(tmp_path))
    workspace = os.path.join(os.path.dirname(__file__), "..", "..", "workspace.yaml")
    params = {
        "selector": {"repositoryLocationName": "chatetl", "repositoryName": "__repository__", "jobName": "ingest_job"},
        "runConfigData": {"ops": {"rag_files": {"config": {"chunk_max_chars": 200, "chunk_overlap_chars": 150}}}},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": "2026-01-01"}]},
    }
    with instance_for_test() as instance, define_out_of_process_context(workspace, None, instance) as context:
        answer = execute_dagster_graphql(context, LAUNCH_RUN, {"params": params}).data["launchRun"]
        assert answer["__typename"] != "LaunchRunSuccess", answer
        assert "Error in config for asset rag_files: overlap_chars (150) must be at most half of max_chars (200)" in answer["message"]
        assert instance.get_runs() == []
