"""How a run's steps run: each in a process of the run's own worker (the default), or each in a
Kubernetes Job of its own (dagster-k8s's `k8s_job_executor`, `CHATETL_EXECUTOR=k8s`), so the steps
of one run spread over a cluster's nodes with the resources each needs."""

from __future__ import annotations

from dagster import ExecutorDefinition, multiprocess_executor

from chatetl.parent_death import children_die_with_parent
from chatetl.settings import Settings

# No step outlives its run: every process that loads these definitions (the run worker, its forkserver,
# each step) has the children it forks die with it. A run worker killed with -9 closes its forkserver's
# pipe, the forkserver exits, and the kernel kills every step process it forked (and theirs), so none
# goes on writing beside the run's retry, or holds a pool slot's work.
children_die_with_parent()

# Each step in its own process (a step that runs out of memory fails alone), forked from a
# server that has already imported Dagster and these definitions (named: a job loaded from a
# code server names no module for Dagster to preload): a step starts in well under a second
# instead of re-importing everything (several seconds per step with `spawn`), and the server
# has installed the rule above before it forks any step. The Neo4j driver, which the definitions
# import only where a step opens it, is preloaded too: imported once per run, not once per step.
step_processes = multiprocess_executor.configured(
    {"start_method": {"forkserver": {"preload_modules": ["dagster._core.executor.multiprocess", "assets.definitions", "neo4j"]}}},
    name="forkserver_multiprocess",
)


def step_executor(settings: Settings) -> ExecutorDefinition:
    """The executor `settings` choose. The Kubernetes one takes its config (per-step requests and
    limits, how many steps at once) from CHATETL_K8S_EXECUTOR_CONFIG, which the Helm chart writes
    from its values; Dagster checks it against the executor's schema when the job is built."""
    if settings.executor == "k8s":
        from dagster_k8s import k8s_job_executor  # the k8s extra, installed in the image

        return k8s_job_executor.configured(dict(settings.k8s_executor_config), name="k8s")
    return step_processes
