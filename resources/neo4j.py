"""The Neo4j resource: one driver per step, checked at start, closed after."""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr


class Neo4jResource(ConfigurableResource):
    uri: str = Field(description="bolt://host:7687, neo4j://, neo4j+s:// ...")
    user: str = "neo4j"
    password: str = Field(description="Set from the environment (EnvVar), never logged")
    database: str = "neo4j"
    max_connection_pool_size: int = 10

    _driver: Any = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        from neo4j import GraphDatabase

        driver = GraphDatabase.driver(
            self.uri, auth=(self.user, self.password), max_connection_pool_size=self.max_connection_pool_size
        )
        try:
            driver.verify_connectivity()
        except BaseException:
            driver.close()  # Dagster does not tear down a resource whose setup failed
            raise
        self._driver = driver

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    @property
    def driver(self) -> Any:
        if self._driver is None:  # used outside a step (e.g. a test or a sensor)
            self.setup_for_execution(None)  # type: ignore[arg-type]
        return self._driver
