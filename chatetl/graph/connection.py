"""Reaching Neo4j: the driver from the settings, and the sessions every graph write uses.

Settings: `NEO4J_URI`, `NEO4J_USER`, `NEO4J_PASSWORD`, `NEO4J_DATABASE` (chatetl.settings: the
environment, else the local services' defaults outside production). The password is never logged.
Write sessions ask the server only for notifications of WARNING severity and up, so the
informational ones (e.g. "constraint already exists" on every idempotent schema statement,
planner hints) do not fill the logs, and not for "unrecognized" ones (a fresh database does not
know the property keys the loader reads before it first writes them). The loader's queries
raise no other warnings (deprecations included: subqueries use the `CALL (x) { ... }` form),
a test holds it so.

Every session is a GraphSession: the driver's own, but a managed transaction the server fails never touches
the connection the driver has given back by then (which another session, in another thread, may be reading).

`run_counted` runs one statement and reports the updates the server counted (what every
load's `graph_updates` adds up); `write_measured` runs one write transaction and reports the
memory the server held for it, and raises TransactionTooBig at once where the server refuses
one for its size (`out_of_memory`: Neo4j reports those as transient, so a managed transaction
would retry the same oversized write for `max_transaction_retry_time` and fail again).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, Final, Literal, ParamSpec, Self, TypeVar, cast

from chatetl.settings import Settings

if TYPE_CHECKING:
    from types import TracebackType

    from neo4j import Driver, ManagedTransaction, Record, Session

P = ParamSpec("P")
R = TypeVar("R")
# a transaction function as the driver runs it: the managed transaction first, then its own arguments
TransactionFunction = Callable[Concatenate["ManagedTransaction", P], R]

NOTIFICATIONS_MIN_SEVERITY: Final = "WARNING"
NOTIFICATIONS_DISABLED_CLASSIFICATIONS: Final[list[Literal["UNRECOGNIZED"]]] = ["UNRECOGNIZED"]

# what the server counts as an update: nodes, relationships, labels and properties written or deleted
UPDATE_COUNTERS = ("nodes_created", "nodes_deleted", "relationships_created", "relationships_deleted", "properties_set",
                   "labels_added", "labels_removed")

# the status codes of a transaction too big for the server's memory limits (GQL 51N72, 51N73):
# `dbms.memory.transaction.total.max` (70% of the heap by default), `db.memory.transaction.max`
OUT_OF_MEMORY_CODES = ("Neo.TransientError.General.MemoryPoolOutOfMemoryError", "Neo.TransientError.General.TransactionMemoryLimit",
                       "Neo.ClientError.General.TransactionOutOfMemoryError")


def neo4j_settings(settings: Settings | None = None) -> dict[str, str]:
    """uri, user, password, database: each set, or an error naming the variable that is not."""
    s = settings or Settings.from_env()
    return {
        "uri": s.require("NEO4J_URI"),
        "user": s.require("NEO4J_USER"),
        "password": s.require("NEO4J_PASSWORD"),
        "database": s.require("NEO4J_DATABASE"),
    }


def open_driver(uri: str | None = None, user: str | None = None, password: str | None = None, settings: Settings | None = None) -> Driver:
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


def write_session(driver: Driver, database: str | None = None) -> GraphSession:
    """A session for graph writes (any driver, however it was configured)."""
    return GraphSession(driver.session(
        database=database,
        notifications_min_severity=NOTIFICATIONS_MIN_SEVERITY,
        notifications_disabled_classifications=NOTIFICATIONS_DISABLED_CLASSIFICATIONS,
    ))


class GraphSession:
    """A driver session whose managed transactions never touch a connection the driver has already given back.

    The neo4j driver (6.4.1) gives a managed transaction's connection back to the pool as soon as the server fails
    one of its statements (the session's transaction error handler; the server's transaction has ended: the driver
    sends RESET). The transaction function's exception then closes the transaction, and its rollback still looks at
    that connection (`defunct()`, a one-byte `recv` on its socket) although another session of the same driver, in
    another thread, may be using it by then: the byte it takes is the first of that session's response, whose reader
    then waits for a chunk that never comes until the socket's 120 s timeout (a load's reader thread and its second
    session share the pool; tests/graph/test_resync.py's four concurrent loads stalled so, about one run in ten, and
    a stalled load's writes outlived the test). So a transaction whose failure the driver has recorded is marked
    closed before the exception leaves the function: its rollback is skipped, nothing else changes (the same
    exception, the driver's retries of transient errors). Everything but `execute_read`/`execute_write` is the
    driver's session itself."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def __enter__(self) -> Self:
        self._session.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # the driver leaves its Session.__exit__ unannotated: it returns None (never swallows the exception)
        session_exit = cast("Callable[[type[BaseException] | None, BaseException | None, TracebackType | None], None]",
                            self._session.__exit__)
        session_exit(exc_type, exc, tb)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def execute_read(self, work: TransactionFunction[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        return self._session.execute_read(_released_on_failure(work), *args, **kwargs)

    def execute_write(self, work: TransactionFunction[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        return self._session.execute_write(_released_on_failure(work), *args, **kwargs)


def _released_on_failure(work: TransactionFunction[P, R]) -> TransactionFunction[P, R]:
    """`work` as a transaction function that marks its transaction closed when it raises after the server failed it
    (GraphSession); the unit of work's `metadata` and `timeout` (what the driver reads from the function) kept."""

    def guarded(tx: ManagedTransaction, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return work(tx, *args, **kwargs)
        except BaseException:
            if getattr(tx, "_last_error", None) is not None:  # the driver gave its connection back
                tx._closed_flag = True
            raise

    for name in ("metadata", "timeout"):
        if hasattr(work, name):
            setattr(guarded, name, getattr(work, name))
    return guarded


class QuietList(list[Any]):
    """A list parameter as the driver sends it, but printed as its length. The driver's Bolt `run` formats the
    repr() of every parameter for its debug log even when that log is off (neo4j 6.4.1), which for a statement of
    thousands of chunk texts and vectors is a large share of a load's time; and a debug log never holds the
    chats' text."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<list of {len(self)}>"


def quiet(params: dict[str, Any]) -> dict[str, Any]:
    """`params` with each list value a QuietList (what every statement of chatetl's passes to `tx.run`)."""
    return {name: QuietList(value) if isinstance(value, list) else value for name, value in params.items()}


def run_write(driver: Driver, database: str | None, cypher: str, **params: Any) -> list[dict[str, Any]]:
    """One write transaction (retried on transient errors) in a session with chatetl's notification policy."""
    with write_session(driver, database) as session:
        return session.execute_write(lambda tx: tx.run(cypher, quiet(params)).data())


def run_read(driver: Driver, database: str | None, cypher: str, **params: Any) -> list[dict[str, Any]]:
    """One read transaction, same session policy."""
    with write_session(driver, database) as session:
        return session.execute_read(lambda tx: tx.run(cypher, quiet(params)).data())


def run_read_values(driver: Driver, database: str | None, cypher: str, **params: Any) -> list[tuple[Any, ...]]:
    """One read transaction's records as tuples of their values, in the statement's RETURN order, as the driver
    gives them: not through `Record.data()`, which walks every value again (each float of a vector: most of an
    unchanged `chatetl load` rerun went there)."""
    with write_session(driver, database) as session:
        return session.execute_read(lambda tx: [tuple(r) for r in tx.run(cypher, quiet(params))])


def run_counted(tx: ManagedTransaction, cypher: str, params: dict[str, Any]) -> tuple[list[Record], int]:
    """Run one statement in `tx`: its records and the updates the server counted."""
    result = tx.run(cypher, quiet(params))
    records = list(result)
    counters = result.consume().counters
    return records, sum(getattr(counters, name) for name in UPDATE_COUNTERS)


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) is the server refusing a transaction for the memory it needs."""
    cause: BaseException | None = exc
    while cause is not None:
        code = getattr(cause, "code", None) or ""
        if code in OUT_OF_MEMORY_CODES or "OutOfMemory" in code or "MemoryLimit" in code:
            return True
        cause = cause.__cause__
    return False


class TransactionTooBig(Exception):
    """The server refused a transaction for the memory it needs (the cause is its error)."""


_OUR_OWN_MISTAKES = ("Neo.ClientError.Statement.SyntaxError", "Neo.ClientError.Statement.ParameterMissing",
                     "Neo.ClientError.Statement.TypeError")


def value_fault(exc: BaseException) -> bool:
    """Whether `exc` is about what was written (its values or its size), so the rest of a batch can still be
    written without it (one conversation, one Document failing alone): not the connection, the server's state,
    the credentials or a statement of chatetl's own (those fail the load)."""
    from neo4j.exceptions import DriverError, Neo4jError

    if isinstance(exc, TransactionTooBig) or out_of_memory(exc):
        return True
    if isinstance(exc, Neo4jError):
        code = exc.code or ""
        return (code.startswith(("Neo.ClientError.Statement.", "Neo.ClientError.Schema.", "Neo.DatabaseError.Statement."))
                and code not in _OUR_OWN_MISTAKES)
    if isinstance(exc, DriverError):  # ResultFailedError: a statement's own failure, read from a later result
        return exc.__cause__ is not None and value_fault(exc.__cause__)
    # a value the driver cannot send: a lone surrogate in a text, an integer beyond 64 bits
    return isinstance(exc, (ValueError, OverflowError))


_OWN_TRANSACTION = """
SHOW TRANSACTIONS YIELD metaData, estimatedUsedHeapMemory
WHERE metaData.chatetl_transaction = $tag
RETURN estimatedUsedHeapMemory AS bytes
"""


def write_measured(session: GraphSession, work: TransactionFunction[P, R], *args: P.args, **kwargs: P.kwargs) -> tuple[R, int]:
    """`work(tx, *args)` in one managed write transaction (retried on transient errors): its result, and the heap the
    server estimates the transaction held just before it committed (its own row of `SHOW TRANSACTIONS`, found by
    its metadata: the memory `dbms.memory.transaction.total.max` limits). Where the server refuses the transaction
    for its size, TransactionTooBig, at once: Neo4j reports that as transient, so a managed transaction would retry
    the same write (for `max_transaction_retry_time`, 30 s by default, each try as slow as the first)."""
    from neo4j import unit_of_work

    tag = uuid.uuid4().hex

    @unit_of_work(metadata={"chatetl_transaction": tag})  # (what execute_write sends with it)
    def measured(tx: ManagedTransaction) -> tuple[R, int]:
        try:
            result = work(tx, *args, **kwargs)
            rows = tx.run(_OWN_TRANSACTION, tag=tag).data()
        except Exception as exc:
            if out_of_memory(exc):
                raise TransactionTooBig(str(exc)) from exc
            raise
        return result, (rows[0]["bytes"] or 0) if rows else 0

    return session.execute_write(measured)
