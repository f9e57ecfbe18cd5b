"""How a run's steps run: in processes of the run's worker by default, each in a Kubernetes Job
of its own with CHATETL_EXECUTOR=k8s (the Helm chart's dagster.stepExecutor)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chatetl.settings import SettingError, Settings

REPO = Path(__file__).resolve().parents[2]
STEP_CONFIG = {
    "max_concurrent": 3,
    "per_step_k8s_config": {
        "documents": {"container_config": {"resources": {"requests": {"cpu": "2", "memory": "3Gi"}}}},
        "graph": {"container_config": {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}},
    },
}


def test_the_default_runs_steps_in_forked_processes():
    from assets.executors import step_executor, step_processes
    from assets.jobs import ingest_job

    assert step_executor(Settings.from_env({})) is step_processes
    assert step_executor(Settings.from_env({"CHATETL_EXECUTOR": "Multiprocess"})) is step_processes
    if "CHATETL_EXECUTOR" not in os.environ:
        assert ingest_job.executor_def is step_processes
    assert step_processes.name == "forkserver_multiprocess"


def test_k8s_runs_each_step_in_a_job_with_its_resources():
    from dagster_k8s import k8s_job_executor

    from assets.executors import step_executor

    settings = Settings.from_env({"CHATETL_EXECUTOR": "k8s", "CHATETL_K8S_EXECUTOR_CONFIG": json.dumps(STEP_CONFIG)})
    executor = step_executor(settings)
    assert executor.name == "k8s" and executor.executor_creation_fn is k8s_job_executor.executor_creation_fn
    config = executor.apply_config_mapping({})  # what a run gets: the settings' config, checked
    assert config.success, config.errors
    per_step = config.value["config"]["per_step_k8s_config"]
    assert {step: c["container_config"] for step, c in per_step.items()} == {
        step: c["container_config"] for step, c in STEP_CONFIG["per_step_k8s_config"].items()}
    assert config.value["config"]["max_concurrent"] == 3


def test_the_code_location_chooses_the_executor_from_its_environment():
    """The job the sensor and the schedule run, as the code server loads it in a k8s deployment."""
    env = {**os.environ, "CHATETL_EXECUTOR": "k8s", "CHATETL_K8S_EXECUTOR_CONFIG": json.dumps(STEP_CONFIG)}
    script = ("import json; from assets.definitions import defs; job = defs.resolve_job_def('ingest_job'); "
              "print(json.dumps([job.executor_def.name, sorted(n.name for n in job.graph.node_defs)]))")
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    name, steps = json.loads(run.stdout.splitlines()[-1])
    assert name == "k8s"
    assert set(STEP_CONFIG["per_step_k8s_config"]) <= set(steps), "per-step keys are the job's step keys"


@pytest.mark.parametrize(("environ", "message"), [
    ({"CHATETL_EXECUTOR": "celery"}, "CHATETL_EXECUTOR='celery': expected one of multiprocess, k8s"),
    ({"CHATETL_K8S_EXECUTOR_CONFIG": "{max_concurrent: 3}"}, "CHATETL_K8S_EXECUTOR_CONFIG: not JSON"),
    ({"CHATETL_K8S_EXECUTOR_CONFIG": "[1]"}, "CHATETL_K8S_EXECUTOR_CONFIG: expected a JSON object, got list"),
])
def test_a_bad_executor_setting_names_the_variable(environ, message):
    with pytest.raises(SettingError, match=message.replace("(", r"\(").replace("[", r"\[")):
        Settings.from_env(environ)
