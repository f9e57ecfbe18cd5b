"""The Dagster UI's asset pages as a person sees them, in headless Chromium: one day of the demo's
samples (and a broken upload) materialized into a fresh DAGSTER_HOME, then `dagster-webserver` on it.
The asset list names every asset; an asset page shows its description with its `<...>` placeholders
(not eaten as HTML), the partitions that exist (no wall of missing days), and the WARN check that
names the broken upload."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance
from dagster._core.instance.ref import InstanceRef
from dagster_dev import dagster_webserver
from headless import chromium, needs_browser
from upload_partitions import partition_for

from chatetl.samples import chatgpt_export
from chatetl.settings import Settings
from chatetl.storage import LocalObjectStore

REPO = Path(__file__).resolve().parents[2]
PAGE_SECONDS = 30


def _text_once(driver, url: str, *words: str) -> str:
    """The page's visible text once every word shows (the UI renders after its queries answer)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    try:
        WebDriverWait(driver, PAGE_SECONDS, poll_frequency=0.5).until(lambda d: all(w in d.find_element("tag name", "body").text for w in words))
    except TimeoutException:
        pytest.fail(f"{url} never showed {words}:\n{driver.find_element('tag name', 'body').text[-3000:]}")
    return str(driver.find_element("tag name", "body").text)


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """A day materialized (raw_uploads, normalized and its checks: no service needed) in a fresh
    DAGSTER_HOME, and the UI on it; the partition's key."""
    sys.path.insert(0, str(REPO / "deploy"))
    from dagster_home import ensure

    from assets.definitions import build_definitions

    work = tmp_path_factory.mktemp("ui")
    home, root = work / "dagster_home", work / "bucket"
    ensure(home)
    env = {"CHATETL_STORE": "local", "CHATETL_LOCAL_STORE_ROOT": str(root)}
    store = LocalObjectStore(root)
    info = store.put_bytes("raw/newcomer/chatgpt-export.zip", chatgpt_export())
    store.put_bytes("raw/newcomer/cut.zip", chatgpt_export()[:700])  # a cut download
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:  # the resources' EnvVars read in the step
        warnings.simplefilter("ignore")
        for name, value in env.items():
            mp.setenv(name, value)
        defs = build_definitions(Settings.from_env(env))
        with DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
            partition = partition_for(instance, info)
            result = defs.resolve_job_def("ingest_job").execute_in_process(
                partition_key=partition, instance=instance, asset_selection=[AssetKey("raw_uploads"), AssetKey("normalized")]
            )
            assert result.success
    server_env = {**os.environ, **env, "DAGSTER_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    with dagster_webserver(["-w", str(REPO / "workspace.yaml")], server_env, REPO, work / "webserver.log") as url:
        yield url, partition, work


@needs_browser
def test_the_asset_pages_tell_the_truth(ui):
    url, partition, work = ui
    with chromium(work / "chromium") as driver:
        listing = _text_once(driver, f"{url}/assets", "raw_uploads", "normalized", "documents", "exports")
        assert "graph" in listing and "rag_files" in listing
        driver.save_screenshot(str(work / "assets.png"))

        overview = _text_once(driver, f"{url}/assets/normalized", "normalized/<table>/date=D/<upload-id>.parquet")
        assert "quarantine/date=D/" in overview
        driver.save_screenshot(str(work / "normalized.png"))
        exports = _text_once(driver, f"{url}/assets/exports", "exports/<format>/<platform>-<title>-<date>-<id>.<ext>")
        assert "<format>" in exports

        partitions = _text_once(driver, f"{url}/assets/normalized?view=partitions", partition, "Missing (")
        # a fresh deployment's partitions are the groups that had uploads, not every day since a start date
        assert "Materialized (1)" in partitions and "Missing (0)" in partitions, partitions[-2000:]
        driver.save_screenshot(str(work / "partitions.png"))

        checks = _text_once(driver, f"{url}/assets/normalized?view=checks", "uploads_read_cleanly", "columns_match_contract")
        assert "columns_match_contract\nSucceeded" in checks and "uploads_read_cleanly\nFailed" in checks, checks[-2000:]
        driver.find_element("xpath", "//*[text()='uploads_read_cleanly']").click()
        detail = _text_once(driver, driver.current_url, "1 unreadable upload(s)", "unreadable_uploads 1")
        assert "non-blocking" in detail and "quarantined_files 2" in detail and partition in detail
        driver.save_screenshot(str(work / "check.png"))
