"""The one Definitions object loads with every asset, sensor, schedule and resource."""

from __future__ import annotations

import importlib
import os


def test_definitions_load_with_everything():
    from chatetl.definitions import defs

    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {"raw_uploads", "normalized", "graph", "documents", "exports"}
    assert defs.resolve_sensor_def("upload_sensor") is not None
    assert defs.resolve_schedule_def("daily_ingest_schedule") is not None
    job = defs.resolve_job_def("ingest_job")
    assert job.partitions_def is not None
    assert set(defs.resources) == {"object_store", "neo4j"}


def test_resources_follow_the_environment(monkeypatch, tmp_path):
    import chatetl.definitions as definitions
    from resources import LocalObjectStoreResource, S3ObjectStoreResource

    monkeypatch.setenv("CHATETL_STORE", "local")
    monkeypatch.setenv("CHATETL_LOCAL_STORE_ROOT", str(tmp_path))
    local = definitions.object_store_resource()
    assert isinstance(local, LocalObjectStoreResource) and local.root == str(tmp_path)
    monkeypatch.setenv("CHATETL_STORE", "s3")
    monkeypatch.setenv("CHATETL_S3_BUCKET", "research-bucket")
    monkeypatch.setenv("CHATETL_S3_PREFIX", "team-a")
    s3 = definitions.object_store_resource()
    assert isinstance(s3, S3ObjectStoreResource) and (s3.bucket, s3.prefix) == ("research-bucket", "team-a")


def test_only_the_definitions_module_imports_dagster():
    """The core library stays pure: importing it (all but definitions) pulls in no Dagster."""
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2] / "chatetl"
    modules = sorted(
        "chatetl." + ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        for p in root.rglob("*.py")
        if p.name not in ("definitions.py", "__main__.py")
    )
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print(sorted(m for m in sys.modules if m.startswith('dagster')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root.parent, env={**os.environ})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert importlib.import_module("chatetl.definitions").defs is not None


def test_production_gets_no_laptop_defaults(monkeypatch):
    from chatetl import settings

    for key in settings.LOCAL_DEFAULTS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("CHATETL_ENV", "production")
    settings.apply_defaults()
    assert "NEO4J_PASSWORD" not in os.environ and "NEO4J_URI" not in os.environ
    monkeypatch.delenv("CHATETL_ENV")
    settings.apply_defaults()
    assert os.environ["NEO4J_URI"] == settings.LOCAL_DEFAULTS["NEO4J_URI"]
