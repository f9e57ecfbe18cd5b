"""Settings from the environment, with embedded defaults that match the local services."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# The local services' settings (deploy/local.env holds the same values for the shell).
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


def apply_defaults() -> None:
    """Fill unset variables with the local defaults (the real environment always wins).

    Not in production (`CHATETL_ENV=production`, as deploy/ sets it): there a missing setting
    must fail loudly (Dagster's EnvVar) instead of quietly pointing at a laptop's services.
    """
    if os.environ.get("CHATETL_ENV") == "production":
        return
    for key, value in LOCAL_DEFAULTS.items():
        os.environ.setdefault(key, value)


def get(key: str) -> str:
    """A setting; outside production an unset one falls back to the local default."""
    if os.environ.get("CHATETL_ENV") == "production":
        return os.environ.get(key, "")
    return os.environ.get(key) or LOCAL_DEFAULTS.get(key, "")


def load_env_file(path: str | Path) -> None:
    """Read KEY=VALUE lines (comments and blanks ignored) as defaults: the real environment wins."""
    p = Path(path)
    if not p.is_file():
        return
    for line in p.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        os.environ.setdefault(key.strip(), value.strip().strip('"').strip("'"))
