"""A managed transaction the server fails never touches the connection the driver gave back meanwhile
(chatetl.graph.connection.GraphSession).

The scenario, in one thread and so the same every run: a pool of one connection; session A's transaction fails on
the key constraint, which gives its connection back to the pool; while A's exception is on its way out of the
transaction function, session B takes that connection and begins a transaction. Then A's transaction closes. The
driver's own session probes B's connection there (`defunct()`: a one-byte read on B's socket, which in another
thread takes the first byte of B's response: the 120 s stalls of four concurrent loads); a GraphSession does not,
and raises the server's own error."""

from __future__ import annotations

import os

import pytest
from neo4j import GraphDatabase
from neo4j._async_compat.network import BoltSocketBase
from neo4j.exceptions import ConstraintError

from chatetl.graph.connection import write_measured, write_session

DB = os.environ.get("NEO4J_DATABASE") or None


@pytest.fixture
def one_connection(services, clean_graph):
    clean_graph.execute_query("CREATE CONSTRAINT released_key IF NOT EXISTS FOR (n:Released) REQUIRE n.key IS UNIQUE",
                              database_=DB)
    clean_graph.execute_query("CREATE (:Released {key: 'taken'})", database_=DB)
    driver = GraphDatabase.driver(services["NEO4J_URI"], auth=(services["NEO4J_USER"], services["NEO4J_PASSWORD"]),
                                  max_connection_pool_size=1)
    yield driver
    driver.close()
    clean_graph.execute_query("DROP CONSTRAINT released_key IF EXISTS", database_=DB)
    clean_graph.execute_query("MATCH (n:Released) DELETE n", database_=DB)


def _race(session_a, session_b, monkeypatch, measured: bool = False):
    """A's transaction fails; B begins one on the connection A gave back; returns (what A raised, how often the
    socket B holds was probed after B got it, B's open transaction)."""
    probed: list[int] = []
    held: dict = {}
    original = BoltSocketBase.at_eof

    def at_eof(sock):
        if held.get("socket") is sock:
            probed.append(1)
        return original(sock)

    monkeypatch.setattr(BoltSocketBase, "at_eof", at_eof)

    def work(tx):
        try:
            tx.run("CREATE (:Released {key: 'taken'})").consume()
        except ConstraintError:
            held["tx"] = session_b.begin_transaction()  # the pool's one connection: the one A's failure gave back
            held["tx"].run("CREATE (:Released {key: 'by b'})").consume()
            held["socket"] = getattr(session_b, "_session", session_b)._connection.socket
            raise

    with pytest.raises(Exception) as raised:
        if measured:
            write_measured(session_a, work)
        else:
            session_a.execute_write(work)
    return raised.value, len(probed), held["tx"]


def test_the_drivers_own_session_probes_the_connection_it_gave_back(one_connection, monkeypatch, clean_graph):
    """The control: this scenario reaches the driver's behaviour that GraphSession works around (when a driver
    release stops probing, this fails: GraphSession may then go)."""
    with one_connection.session(database=DB) as a, one_connection.session(database=DB) as b:
        _, probes, tx_b = _race(a, b, monkeypatch)
        tx_b.commit()
    assert probes >= 1


@pytest.mark.parametrize("measured", [False, True], ids=["execute_write", "write_measured"])
def test_a_failed_transaction_leaves_the_connection_it_gave_back_alone(one_connection, monkeypatch, clean_graph, measured):
    with write_session(one_connection, DB) as a, write_session(one_connection, DB) as b:
        error, probes, tx_b = _race(a, b, monkeypatch, measured)
        assert probes == 0
        assert isinstance(error, ConstraintError)  # the server's own error (the driver's session: ResultFailedError)
        tx_b.commit()  # B's transaction is whole
    rows, _, _ = clean_graph.execute_query("MATCH (n:Released) RETURN n.key AS key ORDER BY key", database_=DB)
    assert [r["key"] for r in rows] == ["by b", "taken"]
    with write_session(one_connection, DB) as a:  # and the session goes on
        assert a.execute_read(lambda tx: tx.run("MATCH (n:Released) RETURN count(n) AS n").single()["n"]) == 2
