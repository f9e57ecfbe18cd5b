"""The story in the UI, end to end in a real browser: an upload lands in the bucket (as any S3
client would put it), `dagster dev` runs the project's workspace, the upload sensor starts a
run by itself, the run succeeds, and headless Chromium shows the asset graph, the assets,
the run and the normalized materialization. Screenshots are saved in the test's temp folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import pytest
from dagster_dev import dagster_dev as dagster_dev_server

from chatetl.samples import chatgpt_export

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ASSETS = ("raw_uploads", "normalized", "graph", "documents")
RUN_TIMEOUT = 300


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _graphql(url: str, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(f"{url}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["data"]


SENSOR_RUNS = """
query {
  runsOrError(filter: {tags: [{key: "dagster/sensor_name", value: "upload_sensor"}]}) {
    ... on Runs { results { runId status tags { key value } } }
  }
}
"""


@pytest.fixture
def dagster_dev(tmp_path, s3_bucket, services):
    """Starts `dagster dev` on a free loopback port, on the project's workspace, with its own
    DAGSTER_HOME and the test bucket; stops its whole process group afterwards."""
    sys.path.insert(0, str(REPO / "deploy"))
    from dagster_home import ensure

    with ExitStack() as running:

        def start() -> str:
            home = tmp_path / "dagster_home"
            ensure(home)
            env = {
                **os.environ,
                "DAGSTER_HOME": str(home),
                "CHATETL_STORE": "s3",
                "CHATETL_S3_BUCKET": s3_bucket,
                "CHATETL_S3_PREFIX": "",
                "PYTHONUNBUFFERED": "1",
            }
            return running.enter_context(dagster_dev_server(["-w", str(REPO / "workspace.yaml")], env, REPO, tmp_path / "dagster-dev.log"))

        yield start


def _browser(url: str, out: Path, name: str, *, dump: bool = False, budget_ms: int = 15000) -> str:
    chromium = _chromium()
    assert chromium
    args = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-quic", "--no-first-run", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={out / ('chromium-' + name)}", "--window-size=1400,900",
        f"--virtual-time-budget={budget_ms}",
    ]
    args += ["--dump-dom"] if dump else [f"--screenshot={out / (name + '.png')}"]
    done = subprocess.run(args + [url], capture_output=True, timeout=120, start_new_session=True)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    if not dump:
        assert (out / f"{name}.png").stat().st_size > 10_000, f"{name}.png looks empty"
    return done.stdout.decode(errors="replace")


@pytest.mark.skipif(_chromium() is None, reason="needs Debian's chromium (apt-get install -y chromium); .ci/run installs it")
def test_an_upload_starts_a_run_by_itself_and_the_ui_tells_the_story(dagster_dev, s3_store, tmp_path):
    out = tmp_path
    # any S3 client: here boto3 straight into the bucket the code location watches
    # (uploaded before the UI starts, so the sensor's first tick finds it: 30 s less to wait)
    info = s3_store.put_bytes("raw/newcomer/chatgpt-export.zip", chatgpt_export())
    url = dagster_dev()

    deadline = time.monotonic() + RUN_TIMEOUT
    run = None
    while time.monotonic() < deadline:
        runs = _graphql(url, SENSOR_RUNS)["runsOrError"]["results"]
        run = runs[0] if runs else None
        if run and run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        time.sleep(1)
    log = (out / "dagster-dev.log").read_text(errors="replace")[-4000:]
    assert run is not None, f"the sensor started no run within {RUN_TIMEOUT} s:\n{log}"
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert run["status"] == "SUCCESS", f"run {run['runId']} ended {run['status']}:\n{log}"
    assert tags["dagster/run_key"] == f"{info.key}@{info.etag}" and tags["dagster/partition"] == f"{info.last_modified.date().isoformat()}/newcomer"

    dom = _browser(f"{url}/assets", out, "assets", dump=True)
    missing = [name for name in ASSETS if name not in dom]
    assert not missing, f"asset catalog lacks {missing}"
    _browser(f"{url}/assets", out, "assets")
    _browser(f"{url}/asset-groups", out, "asset-graph")
    _browser(f"{url}/runs/{run['runId']}", out, "run")
    # the materialization a newcomer opens: what the run did, in words and tables
    normalized_page = f"{url}/assets/normalized?view=events&partition={urllib.parse.quote(tags['dagster/partition'], safe='')}"
    _browser(normalized_page, out, "normalized")
    page = _browser(normalized_page, out, "normalized-dom", dump=True)
    assert all(word in page for word in ("uploads_normalized", "per_source", "1 normalized", "3 conversation(s)")), page[-2000:]
