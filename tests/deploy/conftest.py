"""The PostgreSQL server of the production instance's tests: one per session."""

from __future__ import annotations

import pytest
from postgres_server import running_postgres
from production_topology import deployment  # noqa: F401 (the production topology's processes, a fixture)


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL on a free loopback port (CHATETL_TEST_PG_PORT to choose one)."""
    yield from running_postgres()
