"""The Helm chart (deploy/helm/chatetl) as Kubernetes would receive it, offline.

deploy/helm/check.sh lints and renders the chart with its default values (an evaluation: the
chart deploys PostgreSQL, Neo4j and S3) and with values-production.yaml (managed services,
existing secrets, the Kubernetes step executor), and validates every manifest with
`kubeconform -strict` against the vendored schemas. The tests read what it rendered: the
migration Job, the Dagster instance (validated by Dagster itself), run monitoring, the step
executor's per-step resources, credentials only ever from secrets, pinned images, and every
setting the code reads. check.sh builds helm and kubeconform with Go once (.cache/helm-check/).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from assets.policies import EXPORTS_POOL, RAG_FILES_POOL


def _deploy_files():
    """The helpers of test_deploy_files.py (the compose stack's checks), shared: tests are
    imported by path (--import-mode=importlib), not by name."""
    path = Path(__file__).with_name("test_deploy_files.py")
    spec = importlib.util.spec_from_file_location("deploy_files_checks", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_files = _deploy_files()
CODE_LOCATION, DEPLOY_README, DOCKERFILE, INSTANCE_YAML, REPO = (
    _files.CODE_LOCATION, _files.DEPLOY_README, _files.DOCKERFILE, _files.INSTANCE_YAML, _files.REPO)
check_production_resources, dockerfile_cmd, flag, instance_env_refs = (
    _files.check_production_resources, _files.dockerfile_cmd, _files.flag, _files.instance_env_refs)
kubectl_secrets, load_yaml, pyproject, required_env = (
    _files.kubectl_secrets, _files.load_yaml, _files.pyproject, _files.required_env)
check_gives_back_the_slots_of_a_dead_run, check_run_time_limit = (
    _files.check_gives_back_the_slots_of_a_dead_run, _files.check_run_time_limit)

CHART = REPO / "deploy" / "helm" / "chatetl"
CHECK = REPO / "deploy" / "helm" / "check.sh"
TOOLS = REPO / ".cache" / "helm-check"
CREDENTIAL = re.compile(r"PASSWORD|SECRET|TOKEN|ACCESS_KEY|AUTH", re.IGNORECASE)
# the steps whose pods are heavier than the graph load's
HEAVY_STEPS = ("rag_files", "exports")  # chunks and embeddings; every format and the day's zip


def built(name: str) -> bool:
    return any(TOOLS.glob(f"{name}-v*"))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, list[dict]]:
    """values name -> the rendered objects, after check.sh passed."""
    if not shutil.which("go") and not (built("helm") and built("kubeconform")):
        pytest.skip("go is not installed: deploy/helm/check.sh builds helm and kubeconform with it")
    out = tmp_path_factory.mktemp("rendered")
    run = subprocess.run(["bash", str(CHECK), str(out)], capture_output=True, text=True, timeout=1800)
    if run.returncode == 3:  # no Go new enough to build the tools
        pytest.skip(run.stderr.strip())
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("Invalid: 0, Errors: 0, Skipped: 0") == 2, run.stdout
    return {name: [d for d in yaml.safe_load_all((out / f"{name}.yaml").read_text()) if d] for name in ("default", "production")}


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    (binary,) = TOOLS.glob("helm-v*")
    return subprocess.run([str(binary), "template", "chatetl", str(CHART), "--namespace", "chatetl",
                           "--kube-version", "1.34.4", *args], capture_output=True, text=True, timeout=120)


def objects(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def pod_specs(docs: list[dict]) -> dict[str, dict]:
    return {f"{d['kind']} {d['metadata']['name']}": d["spec"]["template"]["spec"]
            for d in docs if d["kind"] in ("Deployment", "StatefulSet", "Job")}


def containers(spec: dict) -> list[dict]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def instance(docs: list[dict]) -> dict:
    return yaml.safe_load(objects(docs, "ConfigMap")["chatetl-instance"]["data"]["dagster.yaml"])


def env_config(docs: list[dict]) -> dict[str, str]:
    return objects(docs, "ConfigMap")["chatetl-env"]["data"]


@pytest.mark.parametrize("values", ["default", "production"])
def test_the_migration_job_runs_after_install_and_before_upgrades(rendered, values):
    jobs = objects(rendered[values], "Job")
    migrate = jobs["chatetl-migrate"]
    assert set(migrate["metadata"]["annotations"]["helm.sh/hook"].split(",")) == {"post-install", "pre-upgrade"}
    (container,) = migrate["spec"]["template"]["spec"]["containers"]
    command = " ".join(container["command"])
    assert "dagster instance migrate" in command and "dagster instance concurrency set neo4j" in command
    for pool in (RAG_FILES_POOL, EXPORTS_POOL):  # one slot each, set whatever the instance's default
        assert f"dagster instance concurrency set {pool} 1" in command
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/opt/dagster/dagster_home/dagster.yaml"}


@pytest.mark.parametrize("values", ["default", "production"])
def test_the_instance_validates_and_matches_the_compose_instance(rendered, values, tmp_path, monkeypatch):
    from dagster._config import process_config
    from dagster._core.instance.config import dagster_instance_config
    from dagster._core.instance.ref import InstanceRef
    from dagster_k8s import K8sRunLauncher

    config = instance(rendered[values])
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(config))
    checked, _ = dagster_instance_config(str(tmp_path))
    for name in instance_env_refs(config):
        monkeypatch.setenv(name, "5432" if name.endswith("_PORT") else "http://s3.example:8333" if name.endswith("URL") else "x")
    ref = InstanceRef.from_dir(str(tmp_path))
    # the launcher's config as dagster-k8s checks it (building one needs a cluster)
    assert ref.run_launcher_data is not None and ref.run_launcher_data.class_name == "K8sRunLauncher"
    launcher = process_config(K8sRunLauncher.config_type(), checked["run_launcher"]["config"])
    assert launcher.success, launcher.errors
    assert type(ref.run_coordinator).__name__ == "QueuedRunCoordinator"
    assert type(ref.compute_log_manager).__name__ == "S3ComputeLogManager"
    # run monitoring ends a run whose pod is gone (or resumes it once in a new pod)
    monitoring = checked["run_monitoring"]
    assert monitoring["enabled"] and monitoring["poll_interval_seconds"] <= 120
    assert monitoring["start_timeout_seconds"] and monitoring["cancel_timeout_seconds"]
    assert monitoring["max_resume_run_attempts"] >= 1
    # the same database, limits, retries and step logs as the compose stack's deploy/dagster.yaml
    compose = load_yaml(INSTANCE_YAML)
    for section in ("storage", "run_queue", "concurrency", "run_retries", "sensors", "schedules", "telemetry", "nux"):
        assert checked[section] == compose[section], section
    assert {k: v for k, v in monitoring.items() if k != "max_resume_run_attempts"} == {
        k: v for k, v in compose["run_monitoring"].items() if k != "max_resume_run_attempts"}
    logs = checked["compute_logs"]["config"]
    assert logs["prefix"] == compose["compute_logs"]["config"]["prefix"]
    # AWS S3 itself has no endpoint: the chart leaves it out instead of an empty one
    assert ("endpoint_url" in logs) == bool(env_config(rendered[values])["CHATETL_S3_ENDPOINT_URL"])


@pytest.mark.parametrize("values", ["default", "production"])
def test_the_instance_gives_back_the_slots_of_a_dead_run(rendered, values, tmp_path):
    """The chart's instance frees a dead run's `neo4j` slot like every other instance the
    project ships (test_deploy_files.py checks the local and the compose one)."""
    check_gives_back_the_slots_of_a_dead_run(f"helm {values}", instance(rendered[values]), tmp_path / values)


@pytest.mark.parametrize("values", ["default", "production"])
def test_the_instance_stops_a_run_at_the_time_limit(rendered, values, tmp_path):
    """The chart's instance stops a run at the run time limit of the other instances
    (test_deploy_files.py checks the local and the compose one)."""
    check_run_time_limit(f"helm {values}", instance(rendered[values]), tmp_path / values)


@pytest.mark.parametrize("values", ["default", "production"])
def test_run_and_step_pods_get_the_code_locations_image_settings_and_secrets(rendered, values):
    docs = rendered[values]
    launcher = instance(docs)["run_launcher"]["config"]
    assert launcher["instance_config_map"] in objects(docs, "ConfigMap")
    assert launcher["env_config_maps"] == ["chatetl-env"]
    assert launcher["service_account_name"] in objects(docs, "ServiceAccount")
    assert launcher["resources"]["requests"] and launcher["resources"]["limits"]
    assert launcher["run_k8s_config"]["pod_spec_config"]["security_context"]["runAsUser"] == 10001
    code = objects(docs, "Deployment")["chatetl-code-location"]["spec"]["template"]["spec"]
    (server,) = code["containers"]
    args = server["command"] + server["args"]
    # the compose stack's and the image's own command, plus the image that runs and steps use
    assert args[:-2] == dockerfile_cmd()[:-1] + [str(server["ports"][0]["containerPort"])]
    assert (flag(args, "-m"), flag(args, "-a")) == (pyproject()["tool"]["dagster"]["module_name"], pyproject()["tool"]["dagster"]["attribute"])
    assert flag(args, "--container-image") == server["image"]
    workspace = yaml.safe_load(objects(docs, "ConfigMap")["chatetl-workspace"]["data"]["workspace.yaml"])
    (location,) = workspace["load_from"]
    assert location["grpc_server"]["location_name"] == pyproject()["tool"]["dagster"]["code_location_name"] == CODE_LOCATION
    assert location["grpc_server"]["host"] in objects(docs, "Service")
    role = objects(docs, "Role")["chatetl"]
    assert any("jobs" in rule["resources"] and "create" in rule["verbs"] for rule in role["rules"])


def test_the_step_executor_gives_each_step_its_pod_and_resources(rendered):
    from dagster._config import process_config
    from dagster_k8s import k8s_job_executor

    assert "CHATETL_EXECUTOR" not in env_config(rendered["default"]), "one pod per run unless chosen"
    env = env_config(rendered["production"])
    assert env["CHATETL_EXECUTOR"] == "k8s"
    config = json.loads(env["CHATETL_K8S_EXECUTOR_CONFIG"])
    checked = process_config(k8s_job_executor.config_schema.as_field().config_type, config)
    assert checked.success, checked.errors
    assert config["enable_owner_references"] is True

    def requests(step: str) -> tuple[float, float]:
        wanted = config["per_step_k8s_config"][step]["container_config"]["resources"]["requests"]
        return quantity(wanted["cpu"]), quantity(wanted["memory"])

    graph_cpu, graph_memory = requests("graph")
    for step in HEAVY_STEPS:
        cpu, memory = requests(step)
        assert cpu > graph_cpu and memory > graph_memory, step
    # the per-step keys are the job's step keys
    from assets.definitions import defs

    steps = {node.name for node in defs.resolve_job_def("ingest_job").graph.node_defs}
    assert set(config["per_step_k8s_config"]) <= steps


def quantity(text: str) -> float:
    """A Kubernetes quantity (cores or bytes) as a number."""
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, factor in units.items():
        if str(text).endswith(suffix):
            return float(str(text)[: -len(suffix)]) * factor
    return float(text)


@pytest.mark.parametrize("values", ["default", "production"])
def test_credentials_come_only_from_secrets(rendered, values):
    docs = rendered[values]
    for where, spec in pod_specs(docs).items():
        for container in containers(spec):
            for item in container.get("env", []):
                if CREDENTIAL.search(item["name"]):
                    inline = item.get("value")
                    assert "valueFrom" in item or re.fullmatch(r"[\w/]*\$\(\w+\)", inline or ""), \
                        f"{where} {container['name']}: {item['name']} is written inline"
    for name, config_map in objects(docs, "ConfigMap").items():
        for key in config_map["data"]:
            assert not CREDENTIAL.search(key), f"{name}: {key} belongs in a secret"
    secrets = objects(docs, "Secret")
    if values == "production":
        assert not secrets, "production values name existing secrets; the chart makes none"
        return
    # an evaluation's secrets: random, kept across upgrades, none of them from the values
    assert {n: set(s["data"]) for n, s in secrets.items()} == kubectl_secrets()
    for secret in secrets.values():
        assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    again = [d for d in yaml.safe_load_all(helm().stdout) if d and d["kind"] == "Secret"]
    passwords = {s["data"]["postgresql-password"] for s in [*secrets.values(), *again] if "postgresql-password" in s["data"]}
    assert len(passwords) == 2, "a new random password on each render without a cluster to look up"


@pytest.mark.parametrize("values", ["default", "production"])
def test_images_are_pinned_and_dagster_runs_from_the_chatetl_image(rendered, values):
    docs = rendered[values]
    chatetl_image = next(c["image"] for c in objects(docs, "Deployment")["chatetl-code-location"]["spec"]["template"]["spec"]["containers"])
    for where, spec in pod_specs(docs).items():
        for container in containers(spec):
            _repository, sep, tag = container["image"].rpartition(":")
            assert sep and tag and tag != "latest" and "/" not in tag, f"{where}: pin {container['image']}"
    for name in ("chatetl-code-location", "chatetl-webserver", "chatetl-daemon"):
        spec = objects(docs, "Deployment")[name]["spec"]["template"]["spec"]
        assert spec["containers"][0]["image"] == chatetl_image, name
        # the image's own user (deploy/Dockerfile)
        assert spec["securityContext"]["runAsUser"] == 10001 and spec["securityContext"]["runAsNonRoot"]
    assert "--uid 10001" in DOCKERFILE.read_text()
    if values == "default":
        assert chatetl_image.endswith(":" + yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"])
    compose = load_yaml(REPO / "deploy" / "docker-compose.yml")["services"]
    deployed = {c["image"] for spec in pod_specs(docs).values() for c in spec["containers"]}
    if values == "default":  # the same servers as the compose stack
        for service in ("postgres", "neo4j", "s3"):
            assert any(image.endswith(compose[service]["image"]) for image in deployed), service


@pytest.mark.parametrize("values", ["default", "production"])
def test_every_setting_the_code_reads_reaches_the_dagster_pods(rendered, values, monkeypatch):
    docs = rendered[values]
    env = env_config(docs)
    secret_keys: dict[str, set[str]] = kubectl_secrets() if values == "production" else {
        name: set(secret["data"]) for name, secret in objects(docs, "Secret").items()}
    for name in ("chatetl-code-location", "chatetl-webserver", "chatetl-daemon"):
        (container,) = objects(docs, "Deployment")[name]["spec"]["template"]["spec"]["containers"]
        provided = set()
        for source in container["envFrom"]:
            if "configMapRef" in source:
                provided |= set(env)
            else:
                provided |= secret_keys[source["secretRef"]["name"]]
        provided |= {item["name"] for item in container["env"]}
        missing = {k: v for k, v in required_env().items() if k not in provided}
        assert not missing, f"{name}: read by the code but not given: {missing}"
        assert instance_env_refs(instance(docs)) <= provided, name
    # with the secrets' values, assets.definitions takes every resource setting from there
    check_production_resources({**env, "NEO4J_USER": "neo4j", "NEO4J_PASSWORD": "neo4j-secret",
                                "AWS_ACCESS_KEY_ID": "key", "AWS_SECRET_ACCESS_KEY": "s3-secret"}, monkeypatch)


@pytest.mark.parametrize(("unset", "message"), [
    (["--set", "postgresql.deploy=false"], "postgresql.host"),
    (["--set", "neo4j.deploy=false"], "neo4j.uri"),
    (["--set", "image.tag=latest"], "image.tag"),
    (["--set", "settings.NEO4J_PASSWORD=x"], "belongs in a secret"),
    (["--set", "neo4j.heapp=2g"], "additional properties 'heapp' not allowed"),  # values.schema.json
    (["--set", "dagster.instance.storage.sqlite=x"], "/dagster/instance"),  # the chart's own section
])
def test_missing_services_and_unpinned_images_fail_clearly(rendered, unset, message):
    run = helm(*unset)
    assert run.returncode != 0 and message in run.stderr, run.stderr


def test_the_readme_installs_this_chart():
    text = DEPLOY_README.read_text()
    assert "helm upgrade --install chatetl deploy/helm/chatetl" in text
    assert "deploy/helm/check.sh" in text
