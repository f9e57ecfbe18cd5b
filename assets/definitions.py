"""The one Dagster `Definitions` object: every asset, sensor, schedule and resource.

The code location (`-m assets.definitions -a defs`). Everything is built from one read-only
`Settings` (chatetl.settings), so the same code runs on a laptop (local folder or SeaweedFS,
local Neo4j) and in production (S3, a Neo4j server or cluster) without changes:

- resources: the store is chosen by CHATETL_STORE; their deployment settings are `EnvVar`s
  wherever the variable is set (always in production, where an unset one fails when the
  resource starts) and the local services' defaults otherwise; the Neo4j password is never a
  literal in the config the UI shows (unset, the resource takes the local one when it connects);
- run config: graph, rag_files and exports take their defaults from the environment
  (assets/config.py), so the launchpad shows them and a run may choose otherwise.
"""

from __future__ import annotations

from typing import overload

from dagster import Definitions, EnvVar
from dagster_aws.s3 import S3Resource

from assets.config import DocumentsConfig, ExportsConfig, GraphConfig
from assets.documents import documents_asset, rag_files_asset
from assets.exports import exports_asset
from assets.graph import graph_asset
from assets.ingest import normalized, raw_uploads
from assets.jobs import ingest_job
from assets.policies import as_dagster_knows_it
from assets.schedules import daily_schedule
from assets.sensors import upload_sensor
from chatetl.settings import REQUIRED_IN_PRODUCTION, Settings
from resources import (
    LocalObjectStoreResource,
    Neo4jResource,
    ObjectStoreResource,
    S3ObjectStoreResource,
)


@overload
def setting(settings: Settings, name: str, default: str) -> str | EnvVar: ...
@overload
def setting(settings: Settings, name: str, default: str | None) -> str | EnvVar | None: ...
def setting(settings: Settings, name: str, default: str | None) -> str | EnvVar | None:
    """A resource field for deployment variable `name`: an EnvVar of it when it is set (and, in
    production, when it is required: it fails loudly when the resource starts), else `default`."""
    if name in settings.set_in_environment or (settings.production and name in REQUIRED_IN_PRODUCTION):
        return EnvVar(name)
    return default


def required_setting(settings: Settings, name: str, default: str | None) -> str | EnvVar:
    """`setting` for a field that cannot be empty: without a value, the error of `Settings.require`."""
    value = setting(settings, name, default)
    return settings.require(name) if value is None else value


def object_store_resource(settings: Settings | None = None) -> ObjectStoreResource:
    s = settings or Settings.from_env()
    if s.require("CHATETL_STORE") == "s3":
        return S3ObjectStoreResource(
            bucket=required_setting(s, "CHATETL_S3_BUCKET", s.s3_bucket),
            prefix=setting(s, "CHATETL_S3_PREFIX", s.s3_prefix),
            s3=S3Resource(
                endpoint_url=setting(s, "CHATETL_S3_ENDPOINT_URL", s.s3_endpoint_url),
                region_name=setting(s, "AWS_REGION", s.aws_region or "us-east-1"),
            ),
        )
    return LocalObjectStoreResource(root=required_setting(s, "CHATETL_LOCAL_STORE_ROOT", s.local_store_root))


def neo4j_resource(settings: Settings | None = None) -> Neo4jResource:
    s = settings or Settings.from_env()
    return Neo4jResource(
        uri=required_setting(s, "NEO4J_URI", s.neo4j_uri),
        user=required_setting(s, "NEO4J_USER", s.neo4j_user),
        password=setting(s, "NEO4J_PASSWORD", None),  # unset: the local password, taken when it connects
        database=required_setting(s, "NEO4J_DATABASE", s.neo4j_database),
    )


def build_definitions(settings: Settings | None = None) -> Definitions:
    """Everything, for `settings` (default: the environment now). EnvVar fields are read from
    the environment of the process that runs the step, as Dagster does."""
    s = settings or Settings.from_env()
    return Definitions(
        assets=[
            asset.map_asset_specs(as_dagster_knows_it)
            for asset in (
                raw_uploads,
                normalized,
                graph_asset(GraphConfig.for_settings(s)),
                rag_files_asset(DocumentsConfig.for_settings(s)),
                documents_asset(),
                exports_asset(ExportsConfig.for_settings(s)),
            )
        ],
        jobs=[ingest_job],
        sensors=[upload_sensor],
        schedules=[daily_schedule],
        resources={"object_store": object_store_resource(s), "neo4j": neo4j_resource(s)},
    )


defs = build_definitions()
