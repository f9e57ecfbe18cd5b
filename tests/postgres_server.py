"""A throwaway PostgreSQL for the tests of the production instance: deploy/postgres.py, loaded
from its file (deploy/ is scripts, not a package)."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def _load_helper():
    spec = importlib.util.spec_from_file_location("chatetl_deploy_postgres", DEPLOY / "postgres.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


helper = _load_helper()
free_port = helper.free_port


def running_postgres() -> Iterator:
    """Start one (CHATETL_TEST_PG_PORT chooses its port), yield it, stop and remove it."""
    if helper.find_bindir() is None:
        ok, why = helper.install()
        if not ok:
            if os.environ.get("CI"):  # .ci/run installs it: in CI these tests must run
                pytest.fail(f"PostgreSQL is missing in CI: {why}")
            pytest.skip(f"PostgreSQL is not installed and cannot be installed here: {why}")
    # under /tmp: as root the server runs as the postgres user, who must reach the folder
    root = Path(tempfile.mkdtemp(prefix="chatetl-pg-", dir="/tmp" if Path("/tmp").is_dir() else None))
    port = int(os.environ.get("CHATETL_TEST_PG_PORT") or free_port())
    server = helper.ThrowawayPostgres(root, port)
    try:
        server.start()
    except Exception:
        server.stop()
        server.remove()
        raise
    yield server
    stopped = server.stop()
    server.remove()
    assert stopped, "PostgreSQL did not stop"
