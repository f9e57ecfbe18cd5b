"""Reaching Neo4j: the driver from the settings, and the sessions every graph write uses.

Settings: `NEO4J_URI`, `NEO4J_USER`, `NEO4J_PASSWORD`, `NEO4J_DATABASE` (chatetl.settings: the
environment, else the local services' defaults outside production). The password is never logged.
Write sessions ask the server only for notifications of WARNING severity and up, so the
informational ones (e.g. "constraint already exists" on every idempotent schema statement,
planner hints) do not fill the logs, and not for "unrecognized" ones (a fresh database does not
know the property keys the loader reads before it first writes them). The loader's queries
raise no other warnings (deprecations included: subqueries use the `CALL (x) { ... }` form),
a test holds it so.
"""

from __future__ import annotations

from typing import Any

from chatetl.settings import Settings

NOTIFICATIONS_MIN_SEVERITY = "WARNING"
NOTIFICATIONS_DISABLED_CLASSIFICATIONS = ["UNRECOGNIZED"]


def neo4j_settings(settings: Settings | None = None) -> dict[str, str]:
    """uri, user, password, database: each set, or an error naming the variable that is not."""
    s = settings or Settings.from_env()
    return {
        "uri": s.require("NEO4J_URI"),
        "user": s.require("NEO4J_USER"),
        "password": s.require("NEO4J_PASSWORD"),
        "database": s.require("NEO4J_DATABASE"),
    }


def open_driver(uri: str | None = None, user: str | None = None, password: str | None = None, settings: Settings | None = None) -> Any:
    """A driver for the configured Neo4j (arguments override the settings)."""
    from neo4j import GraphDatabase

    if uri and user and password:
        conf = {"uri": uri, "user": user, "password": password}
    else:
        conf = neo4j_settings(settings)
    return GraphDatabase.driver(
        uri or conf["uri"],
        auth=(user or conf["user"], password or conf["password"]),
        notifications_min_severity=NOTIFICATIONS_MIN_SEVERITY,
        notifications_disabled_classifications=NOTIFICATIONS_DISABLED_CLASSIFICATIONS,
    )


def write_session(driver: Any, database: str | None = None) -> Any:
    """A session for graph writes (any driver, however it was configured)."""
    return driver.session(
        database=database,
        notifications_min_severity=NOTIFICATIONS_MIN_SEVERITY,
        notifications_disabled_classifications=NOTIFICATIONS_DISABLED_CLASSIFICATIONS,
    )


def run_write(driver: Any, database: str | None, cypher: str, **params: Any) -> list[dict[str, Any]]:
    """One write transaction (retried on transient errors) in a session with chatetl's notification policy."""
    with write_session(driver, database) as session:
        return session.execute_write(lambda tx: tx.run(cypher, params).data())


def run_read(driver: Any, database: str | None, cypher: str, **params: Any) -> list[dict[str, Any]]:
    """One read transaction, same session policy."""
    with write_session(driver, database) as session:
        return session.execute_read(lambda tx: tx.run(cypher, params).data())
