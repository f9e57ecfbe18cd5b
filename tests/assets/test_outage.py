"""A Neo4j outage when the graph step starts: the step is retried by its policy and the run ends
successful with the day loaded (issue 14, item 8: the resource's start failed, which no retry
policy covers, and a run whose steps then all succeeded was still marked failed).

The outage is real at the socket level: the test's Neo4j address is a forwarder to the real
server that, for its first seconds after the first connection, closes every connection at once.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from urllib.parse import urlparse

import pytest
from dagster import AssetKey, DagsterEventType, DagsterInstance
from upload_partitions import partition_for

from chatetl.samples import chatgpt_export

pytestmark = pytest.mark.integration

DOWN_SECONDS = 1.5


class FlakyForwarder:
    """127.0.0.1:<port> → the real server; down (connections closed unanswered) for DOWN_SECONDS
    from the first connection, then forwarding."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.first: float | None = None
        self.refused = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            now = time.monotonic()
            self.first = self.first or now
            if now - self.first < DOWN_SECONDS:
                self.refused += 1
                conn.close()
                continue
            upstream = socket.create_connection(self.target)
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.closed = True
        self.listener.close()


def test_a_neo4j_outage_at_the_graph_steps_start_is_retried_and_the_run_succeeds(s3_definitions, clean_graph):
    real = urlparse(os.environ["NEO4J_URI"])
    forwarder = FlakyForwarder((real.hostname or "127.0.0.1", real.port or 7687))
    try:
        definitions = s3_definitions(NEO4J_URI=f"bolt://127.0.0.1:{forwarder.port}")
        store = definitions.resources["object_store"].store
        info = store.put_bytes("raw/2026/export.zip", chatgpt_export())
        result = definitions.resolve_job_def("ingest_job").execute_in_process(
            partition_key=partition_for(instance := DagsterInstance.ephemeral(), info), instance=instance, raise_on_error=False,
            asset_selection=[AssetKey("raw_uploads"), AssetKey("normalized"), AssetKey("graph")],
        )
    finally:
        forwarder.close()
    assert forwarder.refused >= 1, "the outage happened"
    retried = [e.step_key for e in result.all_events if e.event_type == DagsterEventType.STEP_UP_FOR_RETRY]
    assert retried and set(retried) == {"graph"}
    assert result.success
    records, _, _ = clean_graph.execute_query("MATCH (c:Conversation) RETURN count(c) AS n")
    assert records[0]["n"] == 3
