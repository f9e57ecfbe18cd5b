"""The Neo4j resource (resources.neo4j.Neo4jResource): its start makes the driver without touching
the network; the first use checks the server (a server that does not answer raises there, in the
step's compute, where its retry policy applies), and the teardown closes the driver."""

from __future__ import annotations

import pytest


def test_neo4j_resource_checks_the_server_on_first_use_and_closes_the_driver_after(monkeypatch):
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
    resource.setup_for_execution(None)  # type: ignore[arg-type]  # no server: the start still succeeds
    assert len(opened) == 1
    with pytest.raises(neo4j.exceptions.ServiceUnavailable):
        _ = resource.driver
    with pytest.raises(neo4j.exceptions.ServiceUnavailable):
        _ = resource.driver  # checked again on the next use, not taken as good
    resource.teardown_after_execution(None)  # type: ignore[arg-type]
    assert opened[0]._closed and resource._driver is None
