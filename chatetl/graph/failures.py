"""Why the graph could not be reached, in one line a person can act on: the setting to check, never the
driver's raw status. `reachable` asks the server once before a read, so a server that is down or
refuses the password fails at once rather than after the driver's retries of a transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatetl.settings import Settings

if TYPE_CHECKING:
    from neo4j import Driver


def reachable(driver: Driver) -> None:
    """One connection attempt (the driver's `verify_connectivity`): raises what `graph_failure` explains."""
    driver.verify_connectivity()


def graph_failure(exc: BaseException, settings: Settings) -> str | None:
    """One line for a failure to reach or read the graph (None: not such a failure)."""
    from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable

    uri = settings.neo4j_uri or "NEO4J_URI (not set)"
    if isinstance(exc, AuthError):
        return f"Neo4j at {uri} refused the user {settings.neo4j_user!r} and its password: check NEO4J_USER and NEO4J_PASSWORD"
    if isinstance(exc, ServiceUnavailable | OSError):
        return f"no Neo4j answers at {uri}: check NEO4J_URI and that Neo4j is running"
    if isinstance(exc, Neo4jError):
        message = (exc.message or "").strip().splitlines()
        return f"Neo4j at {uri} refused the query ({exc.code}): {message[0] if message else type(exc).__name__}"
    if isinstance(exc, DriverError):
        return f"Neo4j at {uri}: {type(exc).__name__}: {' '.join(str(exc).split())}"
    return None
