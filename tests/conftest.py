"""Shared fixtures: the real local services (Neo4j over Bolt, SeaweedFS over S3) and clean state.

The suite uses its own pair of services on other ports than the demo's (17687, 18333),
started by deploy/local_services.py when they do not answer yet, so `pytest` alone works
and never touches the demo's data.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from s3_buckets import fresh_bucket

from chatetl.settings import local_environment

REPO = Path(__file__).resolve().parent.parent

# The test process's environment, as a shell running the suite would have it: the test services'
# ports and DAGSTER_HOME, then deploy/local.env (what is already set wins). chatetl itself never
# writes os.environ; the suite sets up its own, like `deploy/local_env.py` does for `make ui`.
os.environ.update(
    local_environment(
        defaults={
            "NEO4J_URI": "bolt://127.0.0.1:17687",
            "CHATETL_S3_ENDPOINT_URL": "http://127.0.0.1:18333",
            "DAGSTER_HOME": str(REPO / ".services" / "dagster-test-home"),
        }
    )
)
Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that reaches the services (the `services` fixture, itself or through
    neo4j_driver, clean_graph, s3_bucket, the Definitions ...) is `integration`: `make unit`
    runs the others, which need no service."""
    for item in items:
        if "services" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def services() -> dict[str, str]:
    """Make sure the test services answer (starting them if needed); their settings."""
    status = subprocess.run([sys.executable, str(REPO / "deploy" / "local_services.py"), "status"], capture_output=True, text=True)
    if status.returncode != 0:
        up = subprocess.run([sys.executable, str(REPO / "deploy" / "local_services.py"), "up"], capture_output=True, text=True)
        if up.returncode != 0:
            pytest.fail(f"local services did not start:\n{up.stdout}\n{up.stderr}")
    return {k: os.environ[k] for k in ("NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE", "CHATETL_S3_ENDPOINT_URL")}


@pytest.fixture(scope="session")
def neo4j_driver(services):
    from neo4j import GraphDatabase

    driver = GraphDatabase.driver(services["NEO4J_URI"], auth=(services["NEO4J_USER"], services["NEO4J_PASSWORD"]))
    driver.verify_connectivity()
    yield driver
    driver.close()


@pytest.fixture
def clean_graph(neo4j_driver):
    """An empty graph for one test (the test services' database is the suite's own)."""
    with neo4j_driver.session(database=os.environ["NEO4J_DATABASE"]) as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    return neo4j_driver


@pytest.fixture
def s3_bucket(services):
    """A fresh bucket on the real S3 server, removed afterwards."""
    with fresh_bucket(services["CHATETL_S3_ENDPOINT_URL"]) as name:
        yield name


@pytest.fixture
def s3_store(s3_bucket, services):
    from chatetl.storage import S3ObjectStore, s3_client

    return S3ObjectStore(s3_client(services["CHATETL_S3_ENDPOINT_URL"]), s3_bucket)


@pytest.fixture
def s3_definitions(s3_bucket, services, monkeypatch):
    """A factory: the project's Definitions on the real S3 server's test bucket, extra settings as env."""

    def build(**env: str):
        monkeypatch.setenv("CHATETL_STORE", "s3")
        monkeypatch.setenv("CHATETL_S3_BUCKET", s3_bucket)
        monkeypatch.setenv("CHATETL_S3_PREFIX", "")
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        import assets.definitions

        return assets.definitions.build_definitions()

    return build


@pytest.fixture
def definitions(s3_definitions):
    return s3_definitions()


@pytest.fixture(autouse=True)
def _no_dagster_instance_outlives_its_test():
    """Each test starts with no instance's definitions-state storage in Dagster's context.

    An instance entered as a context manager (as Dagster's own helpers do) and never exited leaves
    its storage in a context variable; once that instance is collected, the next `Definitions` to
    build its repository fails with "Attempted to resolve undefined DagsterInstance weakref", at a
    moment that depends on the garbage collector, so in whichever test comes next."""
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    with set_defs_state_storage(None):
        yield
