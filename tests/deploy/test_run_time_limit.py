"""A run whose step never ends is stopped at the run time limit, for real: `dagster dev` on the local
instance the project ships (deploy/dagster.local.yaml, as `make ui` runs it), its limit made a few
seconds, and a step that holds the `neo4j` pool slot until it is told to stop (pool_holder.py).
The daemon's run monitoring fails the run, its step's process ends, the slot is given back."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml
from dagster_dev import pool_holder_dev, submit_hold_job, wait_for

REPO = Path(__file__).resolve().parents[2]
LIMIT = 3  # seconds: the local instance's limit, made tiny for the test
# the daemon polls every 10 s (poll_interval_seconds) and frees a failed run's slots 10 s after its end
STOPPED_WITHIN = 120.0


@pytest.fixture
def limited_instance(tmp_path):
    """`dagster dev` on deploy/dagster.local.yaml with only its run time limit lowered."""
    sys.path.insert(0, str(REPO / "deploy"))
    from dagster_home import TEMPLATE

    settings = yaml.safe_load(TEMPLATE.read_text())
    assert settings["run_monitoring"]["max_runtime_seconds"] > LIMIT  # the shipped limit, replaced
    settings["run_monitoring"]["max_runtime_seconds"] = LIMIT
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump(settings))
    with pool_holder_dev(home, tmp_path) as dev:
        yield dev


def _ended(pid: int) -> bool:
    """The process is gone, or a zombie its parent has not reaped yet."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z"


def test_a_run_whose_step_never_ends_is_stopped_at_the_limit_and_gives_its_slot_back(limited_instance):
    from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus

    log = limited_instance.log
    client = limited_instance.client()
    (limited_instance.holder / "hold").write_text("")  # never removed: the step would hold the slot for good
    run_id = wait_for("the code location to take a run", lambda: submit_hold_job(client), 120, log)
    pid = limited_instance.step_pid(run_id)
    instance = DagsterInstance.from_config(str(limited_instance.home))
    try:
        def finished():
            run = instance.get_run_by_id(run_id)
            return run if run is not None and run.is_finished else None

        run = wait_for("the run to be stopped at the limit", finished, STOPPED_WITHIN, log)
        assert run.status == DagsterRunStatus.FAILURE
        failures = instance.get_records_for_run(run_id, of_type=DagsterEventType.RUN_FAILURE).records
        messages = [r.event_log_entry.dagster_event.message for r in failures if r.event_log_entry.dagster_event]
        assert any(f"Exceeded maximum runtime of {LIMIT} seconds" in (m or "") for m in messages), messages
        wait_for("the step's process to end", lambda: _ended(pid), STOPPED_WITHIN, log)
        wait_for("the neo4j slot to be given back",
                 lambda: instance.event_log_storage.get_concurrency_info("neo4j").claimed_slots == [], STOPPED_WITHIN, log)
    finally:
        instance.dispose()
