"""The Neo4j resource (resources.neo4j.Neo4jResource): when the connectivity check fails, it closes
the driver it opened and keeps none."""

from __future__ import annotations

import pytest


def test_neo4j_resource_closes_the_driver_when_the_server_does_not_answer(monkeypatch):
    import neo4j

    from resources.neo4j import Neo4jResource

    opened = []
    real = neo4j.GraphDatabase.driver

    def spy(*args, **kwargs):
        driver = real(*args, **kwargs)
        opened.append(driver)
        return driver

    monkeypatch.setattr(neo4j.GraphDatabase, "driver", spy)
    resource = Neo4jResource(uri="bolt://127.0.0.1:1", password="not-a-real-password")
    with pytest.raises(Exception):
        resource.setup_for_execution(None)  # type: ignore[arg-type]
    assert len(opened) == 1 and opened[0]._closed and resource._driver is None
