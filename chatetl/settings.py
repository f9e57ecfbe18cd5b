"""Settings: one read-only object built from the environment, with the local services' defaults.

`Settings.from_env()` reads every variable chatetl knows once, parses it (a bad value is an
error naming the variable and the value, whatever the variable) and returns a frozen object.
Nothing in chatetl writes `os.environ`: a process gets its environment before it starts (the
shell, the deployment, `deploy/local_env.py` for `make ui` and the demo).

Two kinds of settings:

- deployment settings (where the bucket and the graph are, the partitions, the embedder):
  outside production an unset one falls back to `LOCAL_DEFAULTS`, the local services' values;
  in production (`CHATETL_ENV=production`, as deploy/ sets it) there are no laptop defaults:
  an unset one is None and `require` fails loudly instead of pointing at a laptop's services.
  The Dagster resources take them as `EnvVar`s (assets.definitions).
- run defaults (deep mode, which internals go out, chunk sizes, export formats): the defaults
  of the assets' run config (assets/config.py) and of the CLI; a run may choose otherwise.

An empty variable counts as unset everywhere. `read_env_file` is the one parser of
deploy/local.env (settings for the local services, read by deploy/local_services.py and,
through `local_environment`, by deploy/local_env.py).

Standard library only: deploy/local_services.py imports it before anything is installed.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from types import MappingProxyType
from typing import Any, overload

PROJECT_ROOT = Path(__file__).resolve().parent.parent
ENV_FILE = PROJECT_ROOT / "deploy" / "local.env"
PRODUCTION = "production"

# The deployment settings' defaults outside production: the local services (deploy/local.env
# holds the same server settings for the shell, with the credentials the servers are started with).
LOCAL_DEFAULTS = {
    "NEO4J_URI": "bolt://127.0.0.1:7687",
    "NEO4J_USER": "neo4j",
    "NEO4J_PASSWORD": "chatetl-local-password",
    "NEO4J_DATABASE": "neo4j",
    "CHATETL_STORE": "local",  # local | s3
    "CHATETL_LOCAL_STORE_ROOT": str(PROJECT_ROOT / ".data" / "bucket"),
    "CHATETL_S3_BUCKET": "chatetl",
    "CHATETL_S3_PREFIX": "",
    "CHATETL_S3_ENDPOINT_URL": "",
    "AWS_REGION": "us-east-1",
}

# What a deployment provides (deploy/docker-compose.yml and deploy/helm set every one).
DEPLOYMENT_VARIABLES = (
    "CHATETL_ENV",
    *LOCAL_DEFAULTS,
    "CHATETL_PARTITIONS_START",
    "CHATETL_BACKFILL_DAYS_PER_RUN",
    "CHATETL_EMBEDDER",
    "CHATETL_EXPORT_FORMATS",
    "CHATETL_EXPORT_ZIP_FORMATS",
)
# Deployment settings that have no value at all in production when unset.
REQUIRED_IN_PRODUCTION = (
    "CHATETL_STORE", "CHATETL_LOCAL_STORE_ROOT", "CHATETL_S3_BUCKET",
    "NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE",
)

# The opt-ins of chatetl.selection.ContentOptions: `CHATETL_INCLUDE_<NAME>` for every output,
# `CHATETL_<SCOPE>_INCLUDE_<NAME>` for one (it wins).
INCLUDE_FIELDS = ("include_reasoning", "include_tools", "include_hidden", "include_branches")
SCOPES = ("RAG", "EXPORT")

# Settings a deployment may leave unset everywhere (built-in defaults): the sensor's caps and
# the run defaults.
OPTIONAL_VARIABLES = (
    "CHATETL_SENSOR_MAX_KEYS",
    "CHATETL_SENSOR_MAX_SECONDS",
    "CHATETL_GRAPH_DEEP",
    *(f"CHATETL_{scope}{name.upper()}" for scope in ("", *(f"{s}_" for s in SCOPES)) for name in INCLUDE_FIELDS),
    "CHATETL_CHUNK_MAX_CHARS",
    "CHATETL_CHUNK_OVERLAP_CHARS",
    "CHATETL_EMBEDDINGS",
    "CHATETL_MAX_VALUE_BYTES",
    "CHATETL_MAX_INFLATED_BYTES",
    "CHATETL_MAX_INFLATE_RATIO",
    "CHATETL_EXECUTOR",
    "CHATETL_K8S_EXECUTOR_CONFIG",
)
EXECUTORS = ("multiprocess", "k8s")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class SettingError(ValueError):
    """A setting with a value that cannot be used, or a required one that is not set."""


def parse_flag(name: str, raw: str | None, default: bool = False) -> bool:
    """A yes/no setting: 1/true/yes/on or 0/false/no/off (any case); unset or blank: `default`."""
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingError(f"{name}={raw!r}: expected one of true/false, yes/no, 1/0, on/off")


@overload
def parse_number(name: str, raw: str | None, default: int, *, minimum: float | None = None) -> int: ...
@overload
def parse_number(name: str, raw: str | None, default: None, *, minimum: float | None = None) -> int | None: ...
@overload
def parse_number(name: str, raw: str | None, default: float, *, kind: type[float], minimum: float | None = None) -> float: ...
def parse_number(name: str, raw: str | None, default: float | None, *, kind: type[int | float] = int,
                 minimum: float | None = None) -> float | None:
    """An integer (`kind=int`) or a finite number (`kind=float`) setting, at least `minimum`; unset or blank: `default`."""
    if raw is None or not raw.strip():
        return default
    what = "an integer" if kind is int else "a number"
    if minimum is not None:
        what += f" of at least {minimum}"
    try:
        value = kind(raw.strip())
    except ValueError:
        raise SettingError(f"{name}={raw!r}: expected {what}") from None
    if (kind is float and not math.isfinite(value)) or (minimum is not None and value < minimum):
        raise SettingError(f"{name}={raw!r}: expected {what}")
    return value


def parse_choice(name: str, raw: str | None, choices: tuple[str, ...]) -> str:
    """One of `choices` (any case); unset or blank: the first."""
    value = (raw or "").strip().lower() or choices[0]
    if value not in choices:
        raise SettingError(f"{name}={raw!r}: expected one of {', '.join(choices)}")
    return value


def parse_json_object(name: str, raw: str | None) -> Mapping[str, Any]:
    """A JSON object (read-only); unset or blank: an empty one."""
    if not (raw or "").strip():
        return MappingProxyType({})
    try:
        value = json.loads(raw or "")
    except ValueError as error:
        raise SettingError(f"{name}: not JSON ({error})") from None
    if not isinstance(value, dict):
        raise SettingError(f"{name}: expected a JSON object, got {type(value).__name__}")
    return MappingProxyType(value)


def read_env_file(path: str | Path) -> dict[str, str]:
    """KEY=VALUE lines of an env file (deploy/local.env); blank lines, '#' comments, a leading
    'export ' and quotes around a value are allowed. A missing file is empty."""
    values: dict[str, str] = {}
    p = Path(path)
    if not p.is_file():
        return values
    for raw in p.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def local_environment(
    environ: Mapping[str, str] | None = None,
    defaults: Mapping[str, str] | None = None,
    env_file: str | Path = ENV_FILE,
) -> dict[str, str]:
    """An environment for a local process: `environ` (default os.environ), where a variable is
    unset or empty `defaults`, else the env file's value. Returned, never applied."""
    out = dict(os.environ if environ is None else environ)
    for key, value in {**read_env_file(env_file), **(defaults or {})}.items():
        if not out.get(key):
            out[key] = value
    return out


@dataclass(frozen=True)
class Settings:
    """Every chatetl setting, parsed. Build it with `Settings.from_env()`."""

    production: bool
    # where the data lives
    store: str | None  # local | s3
    local_store_root: str | None
    s3_bucket: str | None
    s3_prefix: str
    s3_endpoint_url: str | None
    aws_region: str | None
    neo4j_uri: str | None
    neo4j_user: str | None
    neo4j_password: str | None = field(repr=False)
    neo4j_database: str | None
    # the pipeline
    partitions_start: str
    backfill_days_per_run: int
    sensor_max_keys: int
    sensor_max_seconds: float
    embedder: str | None  # `package.module:callable`
    embeddings: bool  # embed every chunk (CHATETL_EMBEDDINGS, on unless turned off)
    # what one upload may take (chatetl.readers.limits)
    max_value_bytes: int  # one JSON string longer than this: its record is quarantined
    max_inflated_bytes: int  # bytes an upload's zips may inflate to in all
    max_inflate_ratio: float  # ... and times the upload's own size (past limits.RATIO_FREE_BYTES)
    # run defaults
    graph_deep: bool
    includes: Mapping[str | None, Mapping[str, bool]]  # scope (None: every output) -> include_* -> on/off
    chunk_max_chars: int | None  # None: chatetl.rag.chunking's default
    chunk_overlap_chars: int | None
    export_formats: str | None  # comma-separated names or `all`; None: every format
    export_zip_formats: str | None  # None: the default bundle; `none`: no zip
    # how a run's steps run (assets.executors): multiprocess, or k8s with its executor's config
    executor: str = "multiprocess"
    k8s_executor_config: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # the deployment variables set in the environment (the others are defaults): for EnvVar
    set_in_environment: frozenset[str] = frozenset()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings of `environ` (default: os.environ, read now)."""
        env = os.environ if environ is None else environ

        def raw(name: str) -> str | None:
            value = env.get(name)
            return value if value else None

        production = (raw("CHATETL_ENV") or "").strip().lower() == PRODUCTION

        def deployment(name: str) -> str | None:
            value = raw(name)
            if value is not None or production:
                return value
            return LOCAL_DEFAULTS.get(name)

        store = (deployment("CHATETL_STORE") or "").strip().lower() or None
        if store not in (None, "local", "s3"):
            raise SettingError(f"CHATETL_STORE={raw('CHATETL_STORE')!r}: expected local or s3")
        start = raw("CHATETL_PARTITIONS_START") or "2024-01-01"
        try:
            date.fromisoformat(start.strip())
        except ValueError:
            raise SettingError(f"CHATETL_PARTITIONS_START={start!r}: expected a date, YYYY-MM-DD") from None

        general = {f: parse_flag(f"CHATETL_{f.upper()}", raw(f"CHATETL_{f.upper()}")) for f in INCLUDE_FIELDS}
        includes: dict[str | None, Mapping[str, bool]] = {None: MappingProxyType(general)}
        for scope in SCOPES:
            name = f"CHATETL_{scope}_" + "{}"
            includes[scope] = MappingProxyType(
                {f: parse_flag(name.format(f.upper()), raw(name.format(f.upper())), general[f]) for f in INCLUDE_FIELDS}
            )

        return cls(
            production=production,
            store=store,
            local_store_root=deployment("CHATETL_LOCAL_STORE_ROOT"),
            s3_bucket=deployment("CHATETL_S3_BUCKET"),
            s3_prefix=deployment("CHATETL_S3_PREFIX") or "",
            s3_endpoint_url=deployment("CHATETL_S3_ENDPOINT_URL") or None,
            aws_region=deployment("AWS_REGION") or None,
            neo4j_uri=deployment("NEO4J_URI"),
            neo4j_user=deployment("NEO4J_USER"),
            neo4j_password=deployment("NEO4J_PASSWORD"),
            neo4j_database=deployment("NEO4J_DATABASE"),
            partitions_start=start.strip(),
            backfill_days_per_run=parse_number("CHATETL_BACKFILL_DAYS_PER_RUN", raw("CHATETL_BACKFILL_DAYS_PER_RUN"), 7, minimum=1),
            sensor_max_keys=parse_number("CHATETL_SENSOR_MAX_KEYS", raw("CHATETL_SENSOR_MAX_KEYS"), 5000, minimum=1),
            sensor_max_seconds=parse_number("CHATETL_SENSOR_MAX_SECONDS", raw("CHATETL_SENSOR_MAX_SECONDS"), 15.0, kind=float, minimum=0),
            embedder=(raw("CHATETL_EMBEDDER") or "").strip() or None,
            embeddings=parse_flag("CHATETL_EMBEDDINGS", raw("CHATETL_EMBEDDINGS"), True),
            max_value_bytes=parse_number("CHATETL_MAX_VALUE_BYTES", raw("CHATETL_MAX_VALUE_BYTES"), 64 * 1024**2, minimum=1),
            max_inflated_bytes=parse_number("CHATETL_MAX_INFLATED_BYTES", raw("CHATETL_MAX_INFLATED_BYTES"), 8 * 1024**3, minimum=1),
            max_inflate_ratio=parse_number("CHATETL_MAX_INFLATE_RATIO", raw("CHATETL_MAX_INFLATE_RATIO"), 100.0, kind=float, minimum=1),
            graph_deep=parse_flag("CHATETL_GRAPH_DEEP", raw("CHATETL_GRAPH_DEEP")),
            includes=MappingProxyType(includes),
            chunk_max_chars=parse_number("CHATETL_CHUNK_MAX_CHARS", raw("CHATETL_CHUNK_MAX_CHARS"), None),
            chunk_overlap_chars=parse_number("CHATETL_CHUNK_OVERLAP_CHARS", raw("CHATETL_CHUNK_OVERLAP_CHARS"), None),
            export_formats=(raw("CHATETL_EXPORT_FORMATS") or "").strip() or None,
            export_zip_formats=(raw("CHATETL_EXPORT_ZIP_FORMATS") or "").strip() or None,
            executor=parse_choice("CHATETL_EXECUTOR", raw("CHATETL_EXECUTOR"), EXECUTORS),
            k8s_executor_config=parse_json_object("CHATETL_K8S_EXECUTOR_CONFIG", raw("CHATETL_K8S_EXECUTOR_CONFIG")),
            set_in_environment=frozenset(name for name in DEPLOYMENT_VARIABLES if raw(name) is not None),
        )

    def require(self, name: str) -> str:
        """The value of deployment variable `name`; unset in production, an error saying so."""
        value = {
            "CHATETL_STORE": self.store,
            "CHATETL_LOCAL_STORE_ROOT": self.local_store_root,
            "CHATETL_S3_BUCKET": self.s3_bucket,
            "NEO4J_URI": self.neo4j_uri,
            "NEO4J_USER": self.neo4j_user,
            "NEO4J_PASSWORD": self.neo4j_password,
            "NEO4J_DATABASE": self.neo4j_database,
        }[name]
        if not value:
            raise SettingError(f"{name} is not set (CHATETL_ENV=production: no local defaults; set it in the deployment)")
        return value

    def content_flags(self, scope: str | None = None) -> dict[str, bool]:
        """The include_* opt-ins for one output (`RAG`, `EXPORT`) or, without a scope, for every output."""
        key = scope.upper() if scope else None
        if key not in self.includes:
            raise SettingError(f"unknown output {scope!r} for CHATETL_<OUTPUT>_INCLUDE_*: expected one of {', '.join(SCOPES)}")
        return dict(self.includes[key])
