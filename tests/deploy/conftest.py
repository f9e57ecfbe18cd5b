"""The PostgreSQL server of the production instance's tests: one per session."""

from __future__ import annotations

import pytest
from postgres_server import running_postgres
from production_topology import deployment, shared_topology  # noqa: F401 (the production topology's processes, fixtures)


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL on a free loopback port (CHATETL_TEST_PG_PORT to choose one)."""
    yield from running_postgres()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on the production topology (the `deployment` fixture) run one after the other, where
    the first of them was: it is started once for them all and stopped before the next test."""
    users = [item for item in items if "deployment" in getattr(item, "fixturenames", ())]
    if users:
        first, chosen = items.index(users[0]), set(map(id, users))
        rest = [item for item in items if id(item) not in chosen]
        items[:] = rest[:first] + users + rest[first:]
