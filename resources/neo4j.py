"""The Neo4j resource: one driver per step, its server checked on first use, closed after.

uri, user and database are config (EnvVar in a deployment); the password is an EnvVar in a
deployment and otherwise left out of the config, so the UI never shows one: unset, the
resource takes the local services' password from chatetl.settings when it connects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from chatetl.settings import Settings
from resources.env import resolved

if TYPE_CHECKING:
    from neo4j import Driver


class Neo4jResource(ConfigurableResource):  # type: ignore[type-arg]  # Dagster's resources subclass it as it is
    uri: str = Field(description="bolt://host:7687, neo4j://, neo4j+s:// ... (NEO4J_URI)")
    user: str = Field(default="neo4j", description="NEO4J_USER")
    password: str | None = Field(
        default=None, description="NEO4J_PASSWORD, from the environment (EnvVar), never logged; unset: the local services' password"
    )
    database: str = Field(default="neo4j", description="NEO4J_DATABASE")
    max_connection_pool_size: int = 10

    _driver: Driver | None = PrivateAttr(default=None)
    _checked: bool = PrivateAttr(default=False)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """Make the driver (no network yet): a server down now fails the step that uses it, in its
        compute, where the step's retry policy applies, not the resource's start (which no retry
        covers, so a run whose every step then succeeded was still marked failed)."""
        self._driver = self._open()
        self._checked = False

    def _open(self) -> Driver:
        from neo4j import GraphDatabase

        conf = resolved(self)
        password = conf.password or Settings.from_env().require("NEO4J_PASSWORD")
        return GraphDatabase.driver(conf.uri, auth=(conf.user, password), max_connection_pool_size=self.max_connection_pool_size)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    @property
    def driver(self) -> Driver:
        """The driver, its server checked on first use (a refused login or no server raises here)."""
        if self._driver is None:  # used outside a step (e.g. a test or a sensor): as a step's start does
            self._driver = self._open()
            self._checked = False
        if not self._checked:
            self._driver.verify_connectivity()
            self._checked = True
        return self._driver
