"""Faults for graph tests, on the real driver: a process that dies in its Nth write transaction
(after the transaction's statements ran, before it committed), and a wait for a transaction that
waits for another's lock (to drive two transactions through a race, one step at a time)."""

from __future__ import annotations

import os
import threading
import time


class Killed(Exception):
    """The process died in a write transaction (after its statements ran, before it committed)."""


class DyingDriver:
    """The real driver, whose sessions die in their write transaction number `after + 1` (counted over
    the run, across sessions and threads); `writes` counts them."""

    def __init__(self, driver, after: int):
        self.driver, self.after, self.writes = driver, after, 0
        self.lock = threading.Lock()

    def session(self, **config):
        return DyingSession(self.driver.session(**config), self)

    def __getattr__(self, name):
        return getattr(self.driver, name)


class DyingSession:
    """A session of a DyingDriver (a base for other faulty sessions: `session`, `owner`)."""

    def __init__(self, session, owner):
        self.session, self.owner = session, owner

    def __enter__(self):
        self.session.__enter__()
        return self

    def __exit__(self, *exc):
        return self.session.__exit__(*exc)

    def __getattr__(self, name):
        return getattr(self.session, name)

    def execute_write(self, work, *args, **kwargs):
        with self.owner.lock:
            self.owner.writes += 1
            dies = self.owner.writes > self.owner.after
        if not dies:
            return self.session.execute_write(work, *args, **kwargs)

        def dying(tx, *a, **k):
            work(tx, *a, **k)
            raise Killed()

        dying.metadata = getattr(work, "metadata", None)
        return self.session.execute_write(dying, *args, **kwargs)


def wait_until_blocked(driver, statement: str, thread: threading.Thread, timeout: float = 60) -> None:
    """Until a transaction running `statement` (a part of its text) waits for a lock (the server says so), while
    `thread`, the one that runs it, is alive."""
    deadline = time.monotonic() + timeout
    while True:
        records, _, _ = driver.execute_query(
            "SHOW TRANSACTIONS YIELD status, currentQuery WHERE status STARTS WITH 'Blocked' AND currentQuery CONTAINS $statement "
            "RETURN status", {"statement": statement}, database_=os.environ.get("NEO4J_DATABASE") or None)
        if records:
            return
        assert time.monotonic() < deadline and thread.is_alive(), f"{statement!r} never waited for a lock"
        time.sleep(0.05)


# what a retraction's last step deletes: the Conversation and its messages
RETRACT_CONVERSATION = "MATCH (c:Conversation {key: $key}) OPTIONAL MATCH (c)-[:HAS_MESSAGE]->(m) DETACH DELETE c, m"


def run_while_deleting(driver, delete: str, params: dict, statement: str, work, timeout: float = 120):
    """`work()` racing a delete: another transaction runs `delete` (with `params`) and holds it uncommitted; `work`
    starts in a thread; once a transaction running `statement` (a part of its text) waits for the delete's lock,
    the delete commits. Returns what `work()` returned (raises what it raised)."""
    outcome: dict = {}

    def run():
        try:
            outcome["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - raised below, in the test's thread
            outcome["error"] = exc

    with driver.session(database=os.environ.get("NEO4J_DATABASE") or None) as other:
        deleting = other.begin_transaction()
        deleting.run(delete, params).consume()
        thread = threading.Thread(target=run)
        thread.start()
        wait_until_blocked(driver, statement, thread)
        deleting.commit()
        thread.join(timeout)
    assert not thread.is_alive(), f"{statement!r} still running {timeout} s after the delete committed"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
