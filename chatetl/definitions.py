"""The one Dagster `Definitions` object: every asset, sensor, schedule and resource.

The only module of chatetl that imports Dagster. Resources are chosen from the
environment, so the same code runs on a laptop (local folder or SeaweedFS, local
Neo4j) and in production (S3, a Neo4j server or cluster) without changes.
"""

from __future__ import annotations

from dagster import Definitions, EnvVar, load_asset_checks_from_modules, load_assets_from_modules

from chatetl import settings

settings.apply_defaults()

import assets.checks  # noqa: E402
import assets.documents  # noqa: E402
import assets.exports  # noqa: E402
import assets.graph  # noqa: E402
import assets.ingest  # noqa: E402
from assets.jobs import ingest_job  # noqa: E402
from assets.schedules import daily_schedule  # noqa: E402
from assets.sensors import upload_sensor  # noqa: E402
from resources import LocalObjectStoreResource, Neo4jResource, ObjectStoreResource, S3ObjectStoreResource  # noqa: E402


def object_store_resource() -> ObjectStoreResource:
    if settings.get("CHATETL_STORE") == "s3":
        return S3ObjectStoreResource(
            bucket=settings.get("CHATETL_S3_BUCKET"),
            prefix=settings.get("CHATETL_S3_PREFIX"),
            endpoint_url=settings.get("CHATETL_S3_ENDPOINT_URL") or None,
            region=settings.get("AWS_REGION") or None,
        )
    return LocalObjectStoreResource(root=settings.get("CHATETL_LOCAL_STORE_ROOT"))


def neo4j_resource() -> Neo4jResource:
    return Neo4jResource(
        uri=EnvVar("NEO4J_URI"),
        user=EnvVar("NEO4J_USER"),
        password=EnvVar("NEO4J_PASSWORD"),
        database=EnvVar("NEO4J_DATABASE"),
    )


def build_definitions() -> Definitions:
    return Definitions(
        assets=load_assets_from_modules([assets.ingest, assets.graph, assets.documents, assets.exports]),
        asset_checks=load_asset_checks_from_modules([assets.checks]),
        jobs=[ingest_job],
        sensors=[upload_sensor],
        schedules=[daily_schedule],
        resources={"object_store": object_store_resource(), "neo4j": neo4j_resource()},
    )


defs = build_definitions()
